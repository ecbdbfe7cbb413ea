package dev.sand.store.cassandra;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DriverException;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.cql.BatchStatement;
import com.datastax.oss.driver.api.core.cql.BatchStatementBuilder;
import com.datastax.oss.driver.api.core.cql.DefaultBatchType;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import dev.sand.config.CassandraConfig;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.store.AppRecord;
import dev.sand.store.ExecutionRecord;
import dev.sand.store.StoreException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The global data layer's connection to Cassandra.
 *
 * <p>Thread-safe: one driver session serves all callers. The driver reconnects to nodes on its own;
 * requests made meanwhile fail with {@link StoreException}.
 */
public final class CassandraStore implements AutoCloseable {
  /** Schema changes wait for every node to agree, which takes longer than a query. */
  private static final Duration SCHEMA_TIMEOUT = Duration.ofSeconds(30);

  private static final int BATCH_BYTES = 4096;

  private final CassandraConfig config;
  private final CqlSession session;
  private final DataTable data;
  private final AccessTable access;
  private volatile PreparedStatement insertExecution;

  private CassandraStore(CassandraConfig config, CqlSession session) {
    this.config = config;
    this.session = session;
    this.data = new DataTable(session, config.keyspace());
    this.access = new AccessTable(session, config.keyspace(), config.contactPoint().toString());
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

  /**
   * Creates the keyspace and tables of {@link CassandraSchema} if absent. Blocking, up to about 30
   * s per statement.
   *
   * @throws StoreException naming the statement that failed
   */
  public void ensureSchema() {
    for (String cql : CassandraSchema.statements(config.keyspace())) {
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
   * Stores {@code records} in {@code executions} as one unlogged batch, without waiting; the stage
   * completes when Cassandra took them (exceptionally when it did not). One request for many
   * records: on a small host, Cassandra's cost is per request more than per row. Prepares the
   * statement on first use (blocking, once).
   */
  public CompletionStage<Void> recordExecutions(List<ExecutionRecord> records) {
    if (records.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    try {
      PreparedStatement insert = insertExecution;
      if (insert == null) {
        insert =
            session.prepare(
                "INSERT INTO "
                    + config.keyspace()
                    + "."
                    + CassandraSchema.EXECUTIONS
                    + " (execution_id, app, workflow, status, output, error, cause, finished_at)"
                    + " VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
        insertExecution = insert;
      }
      // Cassandra refuses batches over 50 KiB and warns over 5 KiB: batches of about 4 KiB, in
      // parallel; a larger record goes alone (a single insert has no such limit)
      List<CompletableFuture<?>> writes = new ArrayList<>();
      BatchStatementBuilder batch = BatchStatement.builder(DefaultBatchType.UNLOGGED);
      int bytes = 0;
      for (ExecutionRecord record : records) {
        int size = sizeOf(record);
        if (bytes > 0 && bytes + size > BATCH_BYTES) {
          writes.add(session.executeAsync(batch.build()).toCompletableFuture());
          batch = BatchStatement.builder(DefaultBatchType.UNLOGGED);
          bytes = 0;
        }
        batch.addStatement(
            insert.bind(
                record.executionId(),
                record.app(),
                record.workflow(),
                record.status().name(),
                record.output(),
                record.error(),
                record.cause(),
                record.finishedAt()));
        bytes += size;
      }
      writes.add(session.executeAsync(batch.build()).toCompletableFuture());
      return CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new));
    } catch (DriverException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * The record of {@code executionId}, or empty. Blocking, bounded by the request timeout.
   *
   * @throws StoreException when no node answers
   */
  public Optional<ExecutionRecord> findExecution(String executionId) {
    Row row =
        query(
                "SELECT execution_id, app, workflow, status, output, error, cause, finished_at FROM "
                    + config.keyspace()
                    + "."
                    + CassandraSchema.EXECUTIONS
                    + " WHERE execution_id = ?",
                executionId)
            .one();
    if (row == null) {
      return Optional.empty();
    }
    return Optional.of(
        new ExecutionRecord(
            row.getString("execution_id"),
            row.getString("app"),
            row.getString("workflow"),
            ExecutionStatus.valueOf(row.getString("status")),
            row.getString("output"),
            row.getString("error"),
            row.getString("cause"),
            row.getInstant("finished_at")));
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

  private static int sizeOf(ExecutionRecord record) {
    return 128
        + length(record.output())
        + length(record.error())
        + length(record.cause())
        + length(record.app())
        + length(record.workflow());
  }

  private static int length(String text) {
    return text == null ? 0 : text.length();
  }

  /** Closes the session and its connections. Blocking, a second or so. */
  @Override
  public void close() {
    session.close();
  }
}
