package dev.sand.agent.data;

import dev.sand.contracts.DataOp;
import dev.sand.contracts.DataReply;
import dev.sand.contracts.DataRequest;
import dev.sand.contracts.contractsConstants;
import dev.sand.store.DataEntry;
import dev.sand.store.cassandra.CassandraStore;
import dev.sand.store.cassandra.DataTable;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * The global data layer as the host agent serves it (decision 0012): grains' requests, checked and
 * carried out on Cassandra ({@link DataTable}), and the check recovery needs — whether what an
 * instance says it wrote is what Cassandra holds.
 *
 * <p>The application is always the caller's word (from the Redis key the request came in on), never
 * the request's. Nothing blocks; every stage completes on the driver's threads. Thread-safe.
 */
public final class GlobalData {
  /** The largest stored value, in bytes; larger puts are refused (the SDK refuses them first). */
  public static final int MAX_VALUE_BYTES = contractsConstants.GDATA_MAX_VALUE_BYTES;

  /** The longest key, in UTF-8 bytes. */
  public static final int MAX_KEY_BYTES = contractsConstants.DATA_MAX_KEY_BYTES;

  private final Supplier<CassandraStore> cassandra;

  /**
   * @param cassandra the connected store, or null while Cassandra is not connected yet
   */
  public GlobalData(Supplier<CassandraStore> cassandra) {
    this.cassandra = cassandra;
  }

  /**
   * Carries out {@code request} for {@code app}. The stage always completes normally: a refused
   * request or a Cassandra failure is a reply with {@code ok = false} and an error saying why.
   */
  public CompletionStage<DataReply> serve(String app, DataRequest request) {
    Optional<String> refused = refusal(request);
    if (refused.isPresent()) {
      return CompletableFuture.completedFuture(failure(refused.get()));
    }
    CassandraStore store = cassandra.get();
    if (store == null) {
      return CompletableFuture.completedFuture(failure("cassandra is not connected yet"));
    }
    DataTable table = store.data();
    String key = request.getKey();
    CompletionStage<DataReply> reply =
        switch (request.getOp()) {
          case GET ->
              table
                  .get(app, key)
                  .thenApply(
                      value -> {
                        DataReply ok = new DataReply().setOk(true);
                        value.ifPresent(ok::setValue);
                        return ok;
                      });
          case PUT -> table.put(app, key, request.getValue()).thenApply(e -> new DataReply(true));
          case DELETE ->
              table.delete(app, key).thenApply(existed -> new DataReply(true).setExisted(existed));
          case KEYS -> table.keys(app, key).thenApply(keys -> new DataReply(true).setKeys(keys));
        };
    return reply.exceptionally(error -> failure("cassandra: " + rootMessage(error)));
  }

  /**
   * Whether every entry of {@code metadata} (an instance's writes to {@code app}'s global data) is
   * what Cassandra holds now: a put's key present with the same size and SHA-256, a delete's key
   * absent. An empty list matches. The stage fails when Cassandra cannot answer: recovery must then
   * assume nothing.
   */
  public CompletionStage<Boolean> matches(String app, List<DataEntry> metadata) {
    if (metadata.isEmpty()) {
      return CompletableFuture.completedFuture(true);
    }
    CassandraStore store = cassandra.get();
    if (store == null) {
      return CompletableFuture.failedFuture(
          new IllegalStateException("cassandra is not connected yet"));
    }
    List<String> keys = metadata.stream().map(DataEntry::key).distinct().toList();
    return store
        .data()
        .metadata(app, keys)
        .thenApply(stored -> metadata.stream().allMatch(entry -> holds(stored, entry)));
  }

  /** Whether {@code entry} is what {@code stored} (Cassandra's metadata, by key) holds. */
  static boolean holds(Map<String, DataEntry> stored, DataEntry entry) {
    DataEntry found = stored.get(entry.key());
    if (entry.isDeleted()) {
      return found == null;
    }
    return found != null
        && found.size() == entry.size()
        && Arrays.equals(found.sha256(), entry.sha256());
  }

  /** Why {@code request} is refused before Cassandra sees it, or empty when it is acceptable. */
  static Optional<String> refusal(DataRequest request) {
    DataOp op = request.getOp();
    if (op == null) {
      return Optional.of("the request names no operation");
    }
    String key = request.getKey() == null ? "" : request.getKey();
    int keyBytes = key.getBytes(StandardCharsets.UTF_8).length;
    if (op != DataOp.KEYS && keyBytes == 0) {
      return Optional.of("the key is empty");
    }
    if (keyBytes > MAX_KEY_BYTES) {
      return Optional.of("the key is " + keyBytes + " bytes, over the limit of " + MAX_KEY_BYTES);
    }
    if (op == DataOp.PUT) {
      if (!request.isSetValue()) {
        return Optional.of("a put without a value");
      }
      int size = request.getValue().length;
      if (size > MAX_VALUE_BYTES) {
        return Optional.of(
            "the value is "
                + size
                + " bytes, over the global data layer's limit of "
                + MAX_VALUE_BYTES
                + " bytes");
      }
    }
    return Optional.empty();
  }

  private static DataReply failure(String why) {
    return new DataReply(false).setError(why);
  }

  private static String rootMessage(Throwable error) {
    Throwable cause = error;
    while (cause instanceof CompletionException && cause.getCause() != null) {
      cause = cause.getCause();
    }
    String message = cause.getMessage();
    return message == null ? cause.getClass().getSimpleName() : message;
  }
}
