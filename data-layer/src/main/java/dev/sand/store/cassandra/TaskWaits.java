package dev.sand.store.cassandra;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import dev.sand.contracts.TaskWaitStatus;
import dev.sand.store.StoreException;
import dev.sand.store.TaskWait;
import dev.sand.store.TaskWaitClaim;
import dev.sand.store.TaskWaitRegistration;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Optional;

/**
 * The waits of task tokens ({@link CassandraSchema#TASK_WAITS}, callbacks, decision 0033): one row
 * per token, keyed by its hash. Every write is a lightweight transaction (LOCAL_SERIAL) and reads
 * are SERIAL, so a callback, a heartbeat and the agent timing a wait out never both win: of a
 * completion and a timeout exactly one applies, and the other is told the status it lost to.
 *
 * <p>Rows expire: each write carries the retention plus, when the wait's timeout is known, the time
 * left until it, so a row lives as long as its wait can, then as long as execution records.
 *
 * <p>Blocking; throws {@link StoreException} when Cassandra does not answer. Thread-safe.
 */
public final class TaskWaits {
  /** Cassandra's largest TTL (20 years). */
  static final long MAX_TTL_SECONDS = 630_720_000L;

  // a row deleted or made between a read and the write that relied on it: read again, this often
  private static final int ATTEMPTS = 3;
  private static final String WAITING = TaskWaitStatus.WAITING.name();

  private final Statements statements;
  private final int retentionSeconds;

  TaskWaits(CqlSession session, String keyspace, String where, int retentionSeconds) {
    this.statements = new Statements(session, keyspace, where);
    this.retentionSeconds = retentionSeconds;
  }

  /**
   * Registers the timer of a wait (step 3a): makes the row WAITING with {@code beat_at = nowMs}
   * unless it exists; else moves its host, member, limits, app and execution to {@code wait}'s (a
   * timer fired again, maybe on another host after a replay), keeping its status and heartbeat.
   */
  public void register(TaskWaitRegistration wait, long nowMs) {
    int ttl = ttlSeconds(wait.timeoutAt(), nowMs);
    ByteBuffer member = ByteBuffer.wrap(wait.member());
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
      boolean made =
          applied(
              statements
                  .prepare(REGISTER)
                  .bind(
                      wait.tokenHash(),
                      wait.app(),
                      wait.executionId(),
                      WAITING,
                      wait.timeoutAt(),
                      wait.heartbeatMs(),
                      nowMs,
                      wait.host(),
                      member,
                      ttl));
      if (made
          || applied(
              statements
                  .prepare(REREGISTER)
                  .bind(
                      ttl,
                      wait.host(),
                      member,
                      wait.timeoutAt(),
                      wait.heartbeatMs(),
                      wait.app(),
                      wait.executionId(),
                      wait.tokenHash()))) {
        return;
      }
      // the row expired between the two: make it again
    }
    throw new StoreException("task wait " + wait.tokenHash() + " could not be registered", null);
  }

  /** The row of {@code tokenHash} read at LOCAL_SERIAL, or empty. */
  public Optional<TaskWait> read(String tokenHash) {
    Row row = statements.runSerial(statements.prepare(READ).bind(tokenHash)).one();
    if (row == null) {
      return Optional.empty();
    }
    ByteBuffer member = row.getByteBuffer("member");
    byte[] bytes = null;
    if (member != null) {
      bytes = new byte[member.remaining()];
      member.duplicate().get(bytes);
    }
    String status = row.getString("status");
    return Optional.of(
        new TaskWait(
            row.getString("token_hash"),
            row.getString("app"),
            row.getString("execution_id"),
            // a row whose status expired before its other cells waits again
            status == null ? TaskWaitStatus.WAITING : TaskWaitStatus.of(status),
            Optional.ofNullable(row.getString("outcome")),
            row.getLong("timeout_at"),
            row.getLong("heartbeat_ms"),
            row.getLong("beat_at"),
            Optional.ofNullable(row.getString("host")),
            Optional.ofNullable(bytes)));
  }

  /**
   * Times {@code wait} out (step 3c) with {@code outcome} if it is still WAITING and no heartbeat
   * came since it was read ({@code beat_at} unchanged). Returns whether it applied.
   */
  public boolean timeOut(TaskWait wait, String outcome, long nowMs) {
    return applied(
        statements
            .prepare(TIME_OUT)
            .bind(
                ttlSeconds(wait.timeoutAt(), nowMs),
                TaskWaitStatus.TIMED_OUT.name(),
                outcome,
                wait.tokenHash(),
                WAITING,
                wait.beatAt()));
  }

  /**
   * Ends the wait of {@code tokenHash} with a callback's {@code status} and {@code outcome} (step
   * 4) if it is WAITING; makes the row with them when there is none yet (a callback faster than the
   * registration, which then fires at once).
   *
   * @param app the application the (verified) token names
   * @param executionId the execution it names
   */
  public TaskWaitClaim complete(
      String tokenHash,
      String app,
      String executionId,
      TaskWaitStatus status,
      String outcome,
      long nowMs) {
    if (!status.ended()) {
      throw new IllegalArgumentException("a callback ends a wait, got " + status);
    }
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
      Optional<TaskWait> found = read(tokenHash);
      if (found.isEmpty()) {
        if (applied(
            statements
                .prepare(COMPLETE_EARLY)
                .bind(tokenHash, app, executionId, status.name(), outcome, retentionSeconds))) {
          return new TaskWaitClaim.Taken(Optional.empty());
        }
        continue; // registered meanwhile
      }
      TaskWait wait = found.get();
      if (wait.status().ended()) {
        return new TaskWaitClaim.Ended(wait.status(), wait.outcome());
      }
      if (applied(
          statements
              .prepare(COMPLETE)
              .bind(
                  ttlSeconds(wait.timeoutAt(), nowMs),
                  status.name(),
                  outcome,
                  tokenHash,
                  WAITING))) {
        return new TaskWaitClaim.Taken(found);
      }
      // ended meanwhile (a timeout, another callback): the next read says how
    }
    throw new StoreException("task wait " + tokenHash + " changed under every attempt", null);
  }

  /**
   * Records a heartbeat ({@code beat_at = nowMs}) of the wait of {@code tokenHash} if it is WAITING
   * (step 4). {@link TaskWaitClaim.Missing} when there is no row: the heartbeat clock starts at the
   * registration.
   */
  public TaskWaitClaim heartbeat(String tokenHash, long nowMs) {
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
      Optional<TaskWait> found = read(tokenHash);
      if (found.isEmpty()) {
        return new TaskWaitClaim.Missing();
      }
      TaskWait wait = found.get();
      if (wait.status().ended()) {
        return new TaskWaitClaim.Ended(wait.status(), wait.outcome());
      }
      if (applied(
          statements
              .prepare(HEARTBEAT)
              .bind(ttlSeconds(wait.timeoutAt(), nowMs), nowMs, tokenHash, WAITING))) {
        return new TaskWaitClaim.Taken(found);
      }
    }
    throw new StoreException("task wait " + tokenHash + " changed under every attempt", null);
  }

  /**
   * The TTL of a write at {@code nowMs} to a wait timing out at {@code timeoutAt} (0: unknown): the
   * time left until then plus the retention, within what Cassandra takes.
   */
  int ttlSeconds(long timeoutAt, long nowMs) {
    // in seconds, rounded up; a timeout far enough to overflow is past every cap anyway
    long left = timeoutAt <= nowMs ? 0 : (timeoutAt - nowMs) / 1000 + 1;
    return (int) Math.max(1, Math.min(MAX_TTL_SECONDS, left + retentionSeconds));
  }

  private boolean applied(BoundStatement statement) {
    Row row =
        statements.run(statement.setSerialConsistencyLevel(ConsistencyLevel.LOCAL_SERIAL)).one();
    return row == null || row.getBoolean("[applied]");
  }

  // -- statements --------------------------------------------------------------------------------

  private static final String COLUMNS =
      "token_hash, app, execution_id, status, outcome, timeout_at, heartbeat_ms, beat_at, host,"
          + " member";
  static final String REGISTER =
      "INSERT INTO %s.task_waits (token_hash, app, execution_id, status, timeout_at, heartbeat_ms,"
          + " beat_at, host, member) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?";
  static final String REREGISTER =
      "UPDATE %s.task_waits USING TTL ? SET host = ?, member = ?, timeout_at = ?,"
          + " heartbeat_ms = ?, app = ?, execution_id = ? WHERE token_hash = ? IF EXISTS";
  static final String READ = "SELECT " + COLUMNS + " FROM %s.task_waits WHERE token_hash = ?";
  static final String TIME_OUT =
      "UPDATE %s.task_waits USING TTL ? SET status = ?, outcome = ? WHERE token_hash = ?"
          + " IF status = ? AND beat_at = ?";
  static final String COMPLETE =
      "UPDATE %s.task_waits USING TTL ? SET status = ?, outcome = ? WHERE token_hash = ?"
          + " IF status = ?";
  static final String COMPLETE_EARLY =
      "INSERT INTO %s.task_waits (token_hash, app, execution_id, status, outcome)"
          + " VALUES (?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?";
  static final String HEARTBEAT =
      "UPDATE %s.task_waits USING TTL ? SET beat_at = ? WHERE token_hash = ? IF status = ?";

  /** The statement that makes this class's table in {@code keyspace}. */
  static List<String> schema(String keyspace) {
    return List.of(
        "CREATE TABLE IF NOT EXISTS "
            + keyspace
            + "."
            + CassandraSchema.TASK_WAITS
            + " (token_hash text PRIMARY KEY, app text, execution_id text, status text,"
            + " outcome text, timeout_at bigint, heartbeat_ms bigint, beat_at bigint, host text,"
            + " member blob)");
  }
}
