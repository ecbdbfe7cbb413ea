package dev.sand.store.cassandra;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.Row;
import dev.sand.store.NameClaim;
import dev.sand.store.StoreException;
import java.time.Clock;
import java.util.List;

/**
 * The names of idempotent starts ({@link CassandraSchema#EXECUTION_NAMES}, decision 0018): one row
 * per (application, name), holding the execution that claimed it and its input's SHA-256, kept as
 * long as execution records (the configured retention as TTL). Blocking; thread-safe.
 */
public final class NameTable {
  private static final String CLAIM =
      "INSERT INTO %s.execution_names (app, name, execution_id, input_sha256, claimed_at)"
          + " VALUES (?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?";
  private static final String RELEASE =
      "DELETE FROM %s.execution_names WHERE app = ? AND name = ? IF execution_id = ?";

  private final Statements statements;
  private final int ttlSeconds;
  private final Clock clock;

  NameTable(CqlSession session, String keyspace, String where, int ttlSeconds, Clock clock) {
    this.statements = new Statements(session, keyspace, where);
    this.ttlSeconds = ttlSeconds;
    this.clock = clock;
  }

  /**
   * Claims {@code name} of {@code app} for {@code executionId} (a lightweight transaction: of two
   * concurrent claims exactly one wins).
   *
   * @param inputSha256 the SHA-256 (hex) of the execution's input, kept to tell a repeated start
   *     from a conflicting one
   * @throws StoreException when Cassandra does not answer
   */
  public NameClaim claim(String app, String name, String executionId, String inputSha256) {
    Row row =
        statements
            .run(
                statements
                    .prepare(CLAIM)
                    .bind(app, name, executionId, inputSha256, clock.instant(), ttlSeconds)
                    .setSerialConsistencyLevel(ConsistencyLevel.LOCAL_SERIAL))
            .one();
    if (row == null || row.getBoolean("[applied]")) {
      return new NameClaim(executionId, inputSha256, true);
    }
    return new NameClaim(row.getString("execution_id"), row.getString("input_sha256"), false);
  }

  /**
   * Gives {@code name} of {@code app} back when {@code executionId} still holds it (its start could
   * not be queued).
   *
   * @throws StoreException when Cassandra does not answer
   */
  public void release(String app, String name, String executionId) {
    statements.run(
        statements
            .prepare(RELEASE)
            .bind(app, name, executionId)
            .setSerialConsistencyLevel(ConsistencyLevel.LOCAL_SERIAL));
  }

  /** The statement that makes this class's table in {@code keyspace}. */
  static List<String> schema(String keyspace) {
    return List.of(
        "CREATE TABLE IF NOT EXISTS "
            + keyspace
            + "."
            + CassandraSchema.EXECUTION_NAMES
            + " (app text, name text, execution_id text, input_sha256 text, claimed_at timestamp,"
            + " PRIMARY KEY ((app, name)))");
  }
}
