package dev.sand.store.cassandra;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DriverException;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Statement;
import dev.sand.store.StoreException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The prepared statements of one table class, made from templates with {@code %s} for the keyspace,
 * and blocking runs at LOCAL_QUORUM that turn driver errors into {@link StoreException}. Preparing
 * blocks (once per template): never call {@link #prepare} on a driver thread (inside a stage's
 * continuation) with a template not prepared before. Thread-safe.
 */
final class Statements {
  static final ConsistencyLevel CONSISTENCY = ConsistencyLevel.LOCAL_QUORUM;

  private final CqlSession session;
  private final String keyspace;
  private final String where;
  private final Map<String, PreparedStatement> prepared = new ConcurrentHashMap<>();

  /**
   * @param where the contact point, for messages
   */
  Statements(CqlSession session, String keyspace, String where) {
    this.session = session;
    this.keyspace = keyspace;
    this.where = where;
  }

  /**
   * The statement of {@code template} in this keyspace, prepared on first use (blocking).
   *
   * @throws StoreException when Cassandra refuses or does not answer
   */
  PreparedStatement prepare(String template) {
    return prepared.computeIfAbsent(
        template,
        t -> {
          try {
            return session.prepare(String.format(t, keyspace));
          } catch (DriverException e) {
            throw new StoreException("cassandra at " + where + ": " + e.getMessage(), e);
          }
        });
  }

  /**
   * Runs {@code statement} at LOCAL_QUORUM. Blocking.
   *
   * @throws StoreException when Cassandra refuses or does not answer
   */
  ResultSet run(Statement<?> statement) {
    return run(statement, CONSISTENCY);
  }

  /**
   * Runs {@code statement} at LOCAL_SERIAL: a read that sees every lightweight transaction applied
   * before it (and completes one left half done). Blocking.
   *
   * @throws StoreException when Cassandra refuses or does not answer
   */
  ResultSet runSerial(Statement<?> statement) {
    return run(statement, ConsistencyLevel.LOCAL_SERIAL);
  }

  private ResultSet run(Statement<?> statement, ConsistencyLevel consistency) {
    try {
      return session.execute(statement.setConsistencyLevel(consistency));
    } catch (DriverException e) {
      throw new StoreException("cassandra at " + where + ": " + e.getMessage(), e);
    }
  }
}
