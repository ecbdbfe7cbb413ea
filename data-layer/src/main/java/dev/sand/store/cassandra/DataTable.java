package dev.sand.store.cassandra;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import dev.sand.store.DataEntry;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The global data layer's table ({@link CassandraSchema#DATA}): one partition per application, its
 * keys in order, each with its value, size, SHA-256 and write time.
 *
 * <p>Every statement runs at LOCAL_QUORUM, reads and writes alike, so with replication factor 3 a
 * read sees the last acknowledged write even when one replica is down. Nothing blocks: each method
 * returns a stage that completes on the driver's thread (callers must not block in it) or
 * exceptionally with the driver's exception. Statements are prepared on first use. Thread-safe.
 */
public final class DataTable {
  private static final ConsistencyLevel CONSISTENCY = ConsistencyLevel.LOCAL_QUORUM;
  private static final int KEYS_PAGE = 1000;

  private final CqlSession session;
  private final String table;
  private final Map<String, CompletionStage<PreparedStatement>> prepared =
      new ConcurrentHashMap<>();

  DataTable(CqlSession session, String keyspace) {
    this.session = session;
    this.table = keyspace + "." + CassandraSchema.DATA;
  }

  /** The value of {@code key} of {@code app}, or empty when absent. */
  public CompletionStage<Optional<byte[]>> get(String app, String key) {
    return run("SELECT value FROM " + table + " WHERE app = ? AND key = ?", app, key)
        .thenApply(rows -> Optional.ofNullable(rows.one()).map(row -> bytes(row.getByteBuffer(0))));
  }

  /**
   * Stores {@code value} under {@code key} of {@code app} with its size, hash and write time;
   * completes with the metadata stored.
   */
  public CompletionStage<DataEntry> put(String app, String key, byte[] value) {
    DataEntry entry = new DataEntry(key, value.length, sha256(value));
    return run(
            "INSERT INTO "
                + table
                + " (app, key, value, size, sha256, written_at) VALUES (?, ?, ?, ?, ?, ?)",
            app,
            key,
            ByteBuffer.wrap(value),
            entry.size(),
            ByteBuffer.wrap(entry.sha256()),
            Instant.now())
        .thenApply(rows -> entry);
  }

  /**
   * Removes {@code key} of {@code app}; completes with whether it was there. The answer comes from
   * a read before the delete (a lightweight transaction would cost four round trips for a
   * courtesy): a concurrent writer may make it stale, the delete itself is not.
   */
  public CompletionStage<Boolean> delete(String app, String key) {
    return run("SELECT size FROM " + table + " WHERE app = ? AND key = ?", app, key)
        .thenCompose(
            found ->
                run("DELETE FROM " + table + " WHERE app = ? AND key = ?", app, key)
                    .thenApply(done -> found.one() != null));
  }

  /**
   * The keys of {@code app} starting with {@code prefix}, in Cassandra's order (UTF-8 bytes, which
   * is Python's order of strings too): a range query within the app's partition, read page by page
   * and stopped at the first key past the prefix.
   */
  public CompletionStage<List<String>> keys(String app, String prefix) {
    return run("SELECT key FROM " + table + " WHERE app = ? AND key >= ?", app, prefix)
        .thenCompose(first -> collectKeys(first, prefix, new ArrayList<>()));
  }

  /** The metadata of each of {@code keys} of {@code app} that is present, by key. */
  public CompletionStage<Map<String, DataEntry>> metadata(String app, List<String> keys) {
    if (keys.isEmpty()) {
      return CompletableFuture.completedFuture(Map.of());
    }
    // IN on the clustering column stays within the app's one partition: one replica set
    return run("SELECT key, size, sha256 FROM " + table + " WHERE app = ? AND key IN ?", app, keys)
        .thenCompose(first -> collectMetadata(first, new HashMap<>()));
  }

  private CompletionStage<List<String>> collectKeys(
      AsyncResultSet page, String prefix, List<String> found) {
    for (Row row : page.currentPage()) {
      String key = row.getString(0);
      if (!key.startsWith(prefix)) {
        return CompletableFuture.completedFuture(found);
      }
      found.add(key);
    }
    return page.hasMorePages()
        ? page.fetchNextPage().thenCompose(next -> collectKeys(next, prefix, found))
        : CompletableFuture.completedFuture(found);
  }

  private CompletionStage<Map<String, DataEntry>> collectMetadata(
      AsyncResultSet page, Map<String, DataEntry> found) {
    for (Row row : page.currentPage()) {
      String key = row.getString(0);
      // a row written before the metadata columns existed has none: it cannot match anything
      if (!row.isNull(1) && !row.isNull(2)) {
        found.put(key, new DataEntry(key, row.getInt(1), bytes(row.getByteBuffer(2))));
      }
    }
    return page.hasMorePages()
        ? page.fetchNextPage().thenCompose(next -> collectMetadata(next, found))
        : CompletableFuture.completedFuture(found);
  }

  private CompletionStage<AsyncResultSet> run(String cql, Object... values) {
    return prepared
        .computeIfAbsent(cql, this::prepare)
        .thenCompose(
            statement -> {
              BoundStatement bound =
                  statement.bind(values).setConsistencyLevel(CONSISTENCY).setPageSize(KEYS_PAGE);
              return session.executeAsync(bound);
            });
  }

  private CompletionStage<PreparedStatement> prepare(String cql) {
    CompletionStage<PreparedStatement> stage = session.prepareAsync(cql);
    // a failed preparation (Cassandra away) must not stick: the next call prepares again
    stage.whenComplete(
        (statement, error) -> {
          if (error != null) {
            prepared.remove(cql, stage);
          }
        });
    return stage;
  }

  /** The SHA-256 of {@code value}. */
  public static byte[] sha256(byte[] value) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(value);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java runtime has SHA-256", e);
    }
  }

  private static byte[] bytes(ByteBuffer buffer) {
    if (buffer == null) {
      return new byte[0];
    }
    byte[] out = new byte[buffer.remaining()];
    buffer.duplicate().get(out);
    return out;
  }
}
