package dev.sand.store.cassandra;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DriverException;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import dev.sand.config.CassandraConfig;
import dev.sand.store.AppRecord;
import dev.sand.store.StoreException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The global data layer's connection to Cassandra.
 *
 * <p>Thread-safe: one driver session serves all callers. The driver reconnects to nodes on its own;
 * requests made meanwhile fail with {@link StoreException}.
 */
public final class CassandraStore implements AutoCloseable {
  /** Schema changes wait for every node to agree, which takes longer than a query. */
  private static final Duration SCHEMA_TIMEOUT = Duration.ofSeconds(30);

  private static final Duration SCHEMA_REFRESH_WINDOW = Duration.ofMillis(10);

  private final CassandraConfig config;
  private final CqlSession session;
  private final DataTable data;
  private final AccessTable access;
  private final ExecutionTable executions;
  private final ExecutionEnds ends;
  private final HistoryTable history;
  private final NameTable names;
  private final TaskWaits taskWaits;
  private final TriggerTable triggers;
  private final ExecutionRecords records;

  private CassandraStore(CassandraConfig config, CqlSession session) {
    this.config = config;
    this.session = session;
    this.data = new DataTable(session, config.keyspace());
    this.access = new AccessTable(session, config.keyspace(), config.contactPoint().toString());
    String where = config.contactPoint().toString();
    this.executions =
        new ExecutionTable(
            session, config.keyspace(), where, config.retentionDays(), Clock.systemUTC());
    this.ends = new ExecutionEnds(session, config.keyspace(), where);
    this.history =
        new HistoryTable(
            session, config.keyspace(), where, config.retentionSeconds(), HistoryTable.DEFAULT_CAP);
    this.names =
        new NameTable(
            session, config.keyspace(), where, config.retentionSeconds(), Clock.systemUTC());
    this.records = new ExecutionRecords(session, executions, history);
    this.taskWaits = new TaskWaits(session, config.keyspace(), where, config.retentionSeconds());
    this.triggers = new TriggerTable(session, config.keyspace(), where, config.retentionSeconds());
  }

  /** Whether triggers are paused, and the firings of schedules (decision 0034). */
  public TriggerTable triggers() {
    return triggers;
  }

  /** The waits of task tokens (callbacks). */
  public TaskWaits taskWaits() {
    return taskWaits;
  }

  /** The names of idempotent starts. */
  public NameTable names() {
    return names;
  }

  /** Execution records, their listing and the names of idempotent starts. */
  public ExecutionTable executions() {
    return executions;
  }

  /** When executions ended (the global bus's replay asks). */
  public ExecutionEnds ends() {
    return ends;
  }

  /** Starts, history events and ends of executions, written together (the recorders'). */
  public ExecutionRecords records() {
    return records;
  }

  /** Executions' history events. */
  public HistoryTable history() {
    return history;
  }

  /** Users, tokens and application owners, on this store's session. */
  public AccessTable access() {
    return access;
  }

  /** The global data layer's table, on this store's session. */
  public DataTable data() {
    return data;
  }

  /**
   * Opens a session to the cluster through {@code config.contactPoint()}. Blocking; each request is
   * bounded by {@code requestTimeout}.
   *
   * @throws StoreException naming the contact point when no node answers
   */
  public static CassandraStore connect(CassandraConfig config, Duration requestTimeout) {
    DriverConfigLoader loader =
        DriverConfigLoader.programmaticBuilder()
            .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, requestTimeout)
            .withDuration(DefaultDriverOption.CONNECTION_CONNECT_TIMEOUT, requestTimeout)
            .withDuration(DefaultDriverOption.CONNECTION_INIT_QUERY_TIMEOUT, requestTimeout)
            .withDuration(DefaultDriverOption.CONTROL_CONNECTION_TIMEOUT, requestTimeout)
            .withDuration(DefaultDriverOption.METADATA_SCHEMA_REQUEST_TIMEOUT, requestTimeout)
            // one connection per node is plenty for the agent and keeps threads and sockets down
            .withInt(DefaultDriverOption.CONNECTION_POOL_LOCAL_SIZE, 1)
            // close() drains the session's requests first; the driver's default then waits a
            // 2 s quiet period per event-loop group for tasks that can no longer come, ~3 s
            // of every agent stop (a thread dump of the shutdown, decision 0037)
            .withInt(DefaultDriverOption.NETTY_IO_SHUTDOWN_QUIET_PERIOD, 0)
            .withInt(DefaultDriverOption.NETTY_ADMIN_SHUTDOWN_QUIET_PERIOD, 0)
            // a schema statement completes only once the driver has refreshed its schema
            // metadata, and the refresh waits out a debounce window, 1 s by default: ~30 s of
            // every start on a fresh keyspace (ensureSchema's ~27 statements; decision 0041).
            // SAND reads no schema metadata, so the window is short and the refresh covers
            // SAND's keyspace only
            .withDuration(DefaultDriverOption.METADATA_SCHEMA_WINDOW, SCHEMA_REFRESH_WINDOW)
            .withStringList(
                DefaultDriverOption.METADATA_SCHEMA_REFRESHED_KEYSPACES, List.of(config.keyspace()))
            // replicated (decision 0042): a write is acknowledged by 2 of 3 replicas and a read
            // asks 2, so every read sees every acknowledged write while one node is down; one
            // node alone keeps the driver's LOCAL_ONE
            .withString(DefaultDriverOption.REQUEST_CONSISTENCY, consistency(config))
            .build();
    InetSocketAddress contact =
        new InetSocketAddress(config.contactPoint().host(), config.contactPoint().port());
    try {
      CqlSession session =
          CqlSession.builder()
              .withConfigLoader(loader)
              .addContactPoint(contact)
              .withLocalDatacenter(config.datacenter())
              .build();
      return new CassandraStore(config, session);
    } catch (DriverException | IllegalStateException e) {
      loader.close();
      throw new StoreException(
          "cassandra at "
              + config.contactPoint()
              + " (datacenter "
              + config.datacenter()
              + "): "
              + e.getMessage(),
          e);
    }
  }

  static String consistency(CassandraConfig config) {
    return config.replicated() ? "LOCAL_QUORUM" : "LOCAL_ONE";
  }

  /**
   * Creates the keyspace and tables of {@link CassandraSchema} if absent. Blocking: about 0.1 s per
   * statement that changes the schema, up to 30 s each.
   *
   * @throws StoreException naming the statement that failed
   */
  public void ensureSchema() {
    for (String cql : CassandraSchema.statements(config.keyspace(), config.replicationFactor())) {
      try {
        session.execute(SimpleStatement.newInstance(cql).setTimeout(SCHEMA_TIMEOUT));
      } catch (DriverException e) {
        throw new StoreException(
            "cassandra at "
                + config.contactPoint()
                + ": schema statement failed: "
                + cql
                + ": "
                + e.getMessage(),
            e);
      }
    }
  }

  /**
   * Checks that the coordinator answers a trivial query and returns its Cassandra version.
   * Blocking, bounded by the request timeout.
   *
   * @throws StoreException when no node answers
   */
  public String ping() {
    try {
      Row row = session.execute("SELECT release_version FROM system.local").one();
      return row == null ? "unknown" : row.getString("release_version");
    } catch (DriverException e) {
      throw new StoreException("cassandra at " + config.contactPoint() + ": " + e.getMessage(), e);
    }
  }

  /**
   * Records that {@code app} is deployed as {@code version} from {@code archive} with {@code
   * options} (JSON), replacing an earlier record. Blocking.
   *
   * @throws StoreException when Cassandra does not take it
   */
  public void saveApp(String app, int version, byte[] archive, String options, Instant at) {
    query(
        "INSERT INTO "
            + config.keyspace()
            + "."
            + CassandraSchema.APPS
            + " (app, version, archive, options, deployed_at) VALUES (?, ?, ?, ?, ?)",
        app,
        version,
        ByteBuffer.wrap(archive),
        options,
        at);
  }

  /**
   * Forgets {@code app} (undeployed). Blocking.
   *
   * @throws StoreException when Cassandra does not take it
   */
  public void deleteApp(String app) {
    query("DELETE FROM " + config.keyspace() + "." + CassandraSchema.APPS + " WHERE app = ?", app);
  }

  /**
   * The version of every deployed application on record, by name. Blocking.
   *
   * @throws StoreException when no node answers
   */
  public Map<String, Integer> appVersions() {
    Map<String, Integer> versions = new TreeMap<>();
    for (Row row :
        query("SELECT app, version FROM " + config.keyspace() + "." + CassandraSchema.APPS)) {
      versions.put(row.getString("app"), row.getInt("version"));
    }
    return versions;
  }

  /**
   * The record of {@code app}, archive included, or empty. Blocking.
   *
   * @throws StoreException when no node answers
   */
  public Optional<AppRecord> findApp(String app) {
    Row row =
        query(
                "SELECT app, version, archive, options, deployed_at FROM "
                    + config.keyspace()
                    + "."
                    + CassandraSchema.APPS
                    + " WHERE app = ?",
                app)
            .one();
    if (row == null) {
      return Optional.empty();
    }
    ByteBuffer archive = row.getByteBuffer("archive");
    byte[] bytes = new byte[archive == null ? 0 : archive.remaining()];
    if (archive != null) {
      archive.get(bytes);
    }
    return Optional.of(
        new AppRecord(
            row.getString("app"),
            row.getInt("version"),
            bytes,
            row.getString("options"),
            row.getInstant("deployed_at")));
  }

  private ResultSet query(String cql, Object... values) {
    try {
      return session.execute(SimpleStatement.newInstance(cql, values));
    } catch (DriverException e) {
      throw new StoreException("cassandra at " + config.contactPoint() + ": " + e.getMessage(), e);
    }
  }

  /** Closes the session and its connections. Blocking, well under a second. */
  @Override
  public void close() {
    session.close();
  }
}
