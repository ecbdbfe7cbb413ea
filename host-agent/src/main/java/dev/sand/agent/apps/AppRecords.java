package dev.sand.agent.apps;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sand.store.AppRecord;
import dev.sand.store.StoreException;
import dev.sand.store.cassandra.CassandraStore;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The deployments on record in the global data layer (Cassandra table {@code apps}): what every
 * host brings back after a restart and what the hosts of a cluster converge on (decision 0011).
 * Each call is one blocking query; a Cassandra that is away is reported, never thrown. Thread-safe.
 */
final class AppRecords {
  private static final Logger LOG = LoggerFactory.getLogger(AppRecords.class);

  private final Supplier<CassandraStore> cassandra;
  private final ObjectMapper mapper;

  AppRecords(Supplier<CassandraStore> cassandra, ObjectMapper mapper) {
    this.cassandra = cassandra;
    this.mapper = mapper;
  }

  /** The recorded version of every app, or empty when Cassandra cannot be asked. */
  Optional<Map<String, Integer>> versions() {
    CassandraStore store = cassandra.get();
    if (store == null) {
      return Optional.empty();
    }
    try {
      return Optional.of(store.appVersions());
    } catch (StoreException e) {
      LOG.atDebug().addKeyValue("error", e.getMessage()).log("deployments not readable");
      return Optional.empty();
    }
  }

  /** The recorded version of {@code app}, 0 when none (or Cassandra cannot be asked). */
  int version(String app) {
    return versions().map(v -> v.getOrDefault(app, 0)).orElse(0);
  }

  /** The record of {@code app}, archive included, or empty. */
  Optional<AppRecord> load(String app) {
    CassandraStore store = cassandra.get();
    try {
      return store == null ? Optional.empty() : store.findApp(app);
    } catch (StoreException e) {
      LOG.atWarn().addKeyValue("app", app).addKeyValue("error", e.getMessage()).log("not loaded");
      return Optional.empty();
    }
  }

  /**
   * Records {@code app} as deployed. Returns an explanation when it could not be recorded (the app
   * then runs here but does not come back after a restart), else empty.
   */
  Optional<String> save(
      String app, int version, byte[] archive, DeployOptions options, Instant at) {
    CassandraStore store = cassandra.get();
    if (store == null) {
      return Optional.of("cassandra is not connected");
    }
    try {
      store.saveApp(app, version, archive, options.toJson(mapper), at);
      return Optional.empty();
    } catch (StoreException e) {
      return Optional.of(e.getMessage());
    }
  }

  /**
   * Forgets {@code app}.
   *
   * @throws DeployException (UNAVAILABLE) when Cassandra does not take it: the app would come back
   */
  void delete(String app) {
    CassandraStore store = cassandra.get();
    if (store == null) {
      throw new DeployException(
          DeployException.Reason.UNAVAILABLE,
          "cassandra is not connected: app '" + app + "' cannot be removed from the record");
    }
    try {
      store.deleteApp(app);
    } catch (StoreException e) {
      throw new DeployException(DeployException.Reason.UNAVAILABLE, e.getMessage());
    }
  }

  /** Reads {@code json} back as deploy options. */
  DeployOptions options(String json) {
    return DeployOptions.fromJson(mapper, json);
  }
}
