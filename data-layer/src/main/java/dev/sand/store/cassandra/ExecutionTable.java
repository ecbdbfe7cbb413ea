package dev.sand.store.cassandra;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DriverException;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.store.ExecutionEnd;
import dev.sand.store.ExecutionQuery;
import dev.sand.store.ExecutionRecord;
import dev.sand.store.ExecutionStart;
import dev.sand.store.StoreException;
import java.time.Clock;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Execution records (decision 0018, "Recording and reading"): the row per execution ({@link
 * CassandraSchema#EXECUTIONS}), the listing per application and day ({@link
 * CassandraSchema#EXECUTIONS_BY_APP}, read by {@link ExecutionListing}). Every write carries the
 * configured retention as its TTL.
 *
 * <p><b>Order without coordination.</b> Starts come from the history topic, ends from the results
 * topic, each recorded by whichever host holds the partition: either may arrive first. The status
 * is written {@code USING TIMESTAMP} of the event that set it (a start at its time in µs, an end at
 * its time + 999 µs so that an end in the same millisecond wins), so a late RUNNING never
 * overwrites a final status and a redrive (later) overwrites the old end. The listing row gets the
 * same cells with the same timestamps, written beside the row without reading anything: a start
 * writes its columns (status, workflow, name, trigger, redrive count), an end its own (status,
 * workflow, end, error, cause), and Cassandra keeps the newest cell of each. Its key needs the
 * start time, which both a start and a result document carry ({@code started_ms}). Only a redrive
 * (which must clear the old end but knows no name) and an end without a start time read the merged
 * row back and write the listing row from it with the timestamp of the row's status. (Every writer
 * of a result document sets {@code started_ms} when it knows it; one that did not, recorded before
 * its execution's start, leaves the listing row saying RUNNING while the row by id is right.)
 *
 * <p>Reads are blocking and throw {@link StoreException}; writes return stages that complete on the
 * driver's thread. LOCAL_QUORUM throughout, so a write is seen by the read that follows it.
 * Thread-safe.
 */
public final class ExecutionTable {
  private static final ConsistencyLevel CONSISTENCY = Statements.CONSISTENCY;
  // an end in the same millisecond as its start still wins (see the class comment)
  private static final long END_TIMESTAMP_OFFSET_US = 999;

  private final CqlSession session;
  private final int ttlSeconds;
  private final Statements statements;
  private final ExecutionListing listing;

  ExecutionTable(
      CqlSession session, String keyspace, String where, int retentionDays, Clock clock) {
    this.session = session;
    this.statements = new Statements(session, keyspace, where);
    this.ttlSeconds = retentionDays * 86_400;
    this.listing = new ExecutionListing(session, statements, where, retentionDays, clock);
  }

  // -- writes ------------------------------------------------------------------------------------

  /**
   * Adds to {@code writes} what records {@code starts} (RUNNING: started or redriven) and {@code
   * ends}: each execution's row and its listing row. The start and the end of a short execution
   * then travel in one batch and become one mutation per row: Cassandra merges a batch's statements
   * per partition, each cell keeping its own statement's timestamp. The executions whose listing
   * row must be written from their merged row (a redrive, an end without its start time) are added
   * to {@code relist}, for {@link #relist} once the writes were taken. Prepares statements on first
   * use (blocking, once).
   */
  void writes(
      List<ExecutionStart> starts,
      List<ExecutionEnd> ends,
      List<Batches.Write> writes,
      Set<String> relist) {
    PreparedStatement start = statements.prepare(START);
    PreparedStatement redrive = statements.prepare(REDRIVE);
    PreparedStatement listStart = statements.prepare(LIST_START);
    PreparedStatement end = statements.prepare(END);
    PreparedStatement endStarted = statements.prepare(END_STARTED);
    PreparedStatement listEnd = statements.prepare(LIST_END);
    prepareRelist();
    for (ExecutionStart s : starts) {
      long timestamp = s.at().toEpochMilli() * 1000;
      if (s.redriven()) {
        writes.add(
            write(
                redrive.bind(
                    ttlSeconds,
                    timestamp,
                    s.app(),
                    s.workflow(),
                    ExecutionStatus.RUNNING.name(),
                    s.redriveCount(),
                    s.executionId())));
        relist.add(s.executionId());
        continue;
      }
      writes.add(
          write(
              start.bind(
                  ttlSeconds,
                  timestamp,
                  s.app(),
                  s.workflow(),
                  ExecutionStatus.RUNNING.name(),
                  s.input(),
                  s.name(),
                  s.trigger(),
                  s.startedAt(),
                  s.redriveCount(),
                  s.executionId()),
              s.input(),
              s.trigger()));
      writes.add(
          write(
              listStart.bind(
                  ttlSeconds,
                  timestamp,
                  s.workflow(),
                  ExecutionStatus.RUNNING.name(),
                  s.name(),
                  s.trigger(),
                  s.redriveCount(),
                  s.app(),
                  day(s.startedAt()),
                  s.startedAt(),
                  s.executionId())));
    }
    for (ExecutionEnd e : ends) {
      long timestamp = e.finishedAt().toEpochMilli() * 1000 + END_TIMESTAMP_OFFSET_US;
      // the same cells either way; with its start time when the result document says it
      Object[] cells = {
        ttlSeconds,
        timestamp,
        e.app(),
        e.workflow(),
        e.status().name(),
        e.output(),
        e.error(),
        e.cause(),
        e.finishedAt()
      };
      if (e.startedAt() == null) {
        writes.add(write(end.bind(append(cells, e.executionId())), e.output(), e.cause()));
        relist.add(e.executionId());
        continue;
      }
      writes.add(
          write(
              endStarted.bind(append(cells, e.startedAt(), e.executionId())),
              e.output(),
              e.cause()));
      writes.add(
          write(
              listEnd.bind(
                  ttlSeconds,
                  timestamp,
                  e.workflow(),
                  e.status().name(),
                  e.finishedAt(),
                  e.error(),
                  e.cause(),
                  e.app(),
                  day(e.startedAt()),
                  e.startedAt(),
                  e.executionId()),
              e.cause()));
    }
  }

  private static Batches.Write write(BoundStatement statement, String... texts) {
    return new Batches.Write(statement.setConsistencyLevel(CONSISTENCY), Batches.size(texts));
  }

  private static Object[] append(Object[] head, Object... tail) {
    Object[] all = java.util.Arrays.copyOf(head, head.length + tail.length);
    System.arraycopy(tail, 0, all, head.length, tail.length);
    return all;
  }

  /**
   * Writes the listing rows of {@code executionIds} from their merged rows (see the class comment),
   * after their own writes were taken.
   */
  CompletionStage<Void> relist(Collection<String> executionIds) {
    return CompletableFuture.allOf(
        executionIds.stream()
            .map(id -> relist(id).toCompletableFuture())
            .toArray(CompletableFuture[]::new));
  }

  /** Writes the listing row of {@code executionId} from its merged row (see the class comment). */
  private CompletionStage<Void> relist(String executionId) {
    return execute(statements.prepare(READ_FOR_LISTING).bind(executionId))
        .thenCompose(
            rows -> {
              Row row = rows.one();
              if (row == null
                  || row.getInstant("started_at") == null
                  || row.getString("app") == null
                  || row.getString("status") == null) {
                return CompletableFuture.completedFuture(null);
              }
              Instant started = row.getInstant("started_at");
              return execute(
                      statements
                          .prepare(LIST)
                          .bind(
                              ttlSeconds,
                              row.getLong("status_written"),
                              row.getString("workflow"),
                              row.getString("status"),
                              row.getString("name"),
                              row.getString("trigger"),
                              row.getInstant("finished_at"),
                              row.getString("error"),
                              row.getString("cause"),
                              row.isNull("redrive_count") ? 0 : row.getInt("redrive_count"),
                              row.getString("app"),
                              day(started),
                              started,
                              executionId))
                  .thenApply(ignored -> null);
            });
  }

  private void prepareRelist() {
    statements.prepare(READ_FOR_LISTING);
    statements.prepare(LIST);
  }

  // -- reads -------------------------------------------------------------------------------------

  /**
   * The record of {@code executionId}, or empty when neither its start nor its end is recorded.
   * Blocking.
   *
   * @throws StoreException when no node answers
   */
  public Optional<ExecutionRecord> find(String executionId) {
    Row row = statements.run(statements.prepare(FIND).bind(executionId)).one();
    if (row == null || row.getString("status") == null) {
      return Optional.empty();
    }
    return Optional.of(
        new ExecutionRecord(
            row.getString("execution_id"),
            row.getString("app"),
            row.getString("workflow"),
            ExecutionStatus.valueOf(row.getString("status")),
            row.getString("input"),
            row.getString("output"),
            row.getString("error"),
            row.getString("cause"),
            row.getString("name"),
            row.getString("trigger"),
            row.getInstant("started_at"),
            row.getInstant("finished_at"),
            row.isNull("redrive_count") ? 0 : row.getInt("redrive_count"),
            !row.isNull("history_truncated") && row.getBoolean("history_truncated")));
  }

  /**
   * One page of {@code query}: newest first, merged over its applications, day by day from the
   * cursor (or today) back to {@code since} or the retention window. Costs one query per
   * application and day visited (a day's queries in parallel), plus more pages where a status
   * filter skips rows. Blocking.
   *
   * @throws StoreException when no node answers
   */
  public ExecutionQuery.Page list(ExecutionQuery query) {
    return listing.list(query);
  }

  /** The listing partition ({@code day} = days since the epoch, UTC) a start time falls in. */
  static int day(Instant at) {
    return (int) LocalDate.ofInstant(at, ZoneOffset.UTC).toEpochDay();
  }

  // -- statements --------------------------------------------------------------------------------

  private static final String START =
      "UPDATE %s.executions USING TTL ? AND TIMESTAMP ? SET app = ?, workflow = ?, status = ?,"
          + " input = ?, name = ?, trigger = ?, started_at = ?, redrive_count = ?"
          + " WHERE execution_id = ?";
  // a redrive keeps the input, name, trigger and start (the listing row's key) and clears the old
  // end
  private static final String REDRIVE =
      "UPDATE %s.executions USING TTL ? AND TIMESTAMP ? SET app = ?, workflow = ?, status = ?,"
          + " redrive_count = ?, output = null, error = null, cause = null, finished_at = null"
          + " WHERE execution_id = ?";
  private static final String END =
      "UPDATE %s.executions USING TTL ? AND TIMESTAMP ? SET app = ?, workflow = ?, status = ?,"
          + " output = ?, error = ?, cause = ?, finished_at = ? WHERE execution_id = ?";
  // a result document that carries the start (the same started_ms its ExecutionStarted event
  // has) lists the execution without waiting for its start (an app without history has none)
  private static final String END_STARTED =
      "UPDATE %s.executions USING TTL ? AND TIMESTAMP ? SET app = ?, workflow = ?, status = ?,"
          + " output = ?, error = ?, cause = ?, finished_at = ?, started_at = ?"
          + " WHERE execution_id = ?";
  private static final String READ_FOR_LISTING =
      "SELECT app, workflow, status, WRITETIME(status) AS status_written, name, trigger,"
          + " started_at, finished_at, error, cause, redrive_count FROM %s.executions"
          + " WHERE execution_id = ?";
  private static final String LIST =
      "UPDATE %s.executions_by_app USING TTL ? AND TIMESTAMP ? SET workflow = ?, status = ?,"
          + " name = ?, trigger = ?, finished_at = ?, error = ?, cause = ?, redrive_count = ?"
          + " WHERE app = ? AND day = ? AND started_at = ? AND execution_id = ?";
  // the cells a start and an end own in the listing row (see the class comment)
  private static final String LIST_START =
      "UPDATE %s.executions_by_app USING TTL ? AND TIMESTAMP ? SET workflow = ?, status = ?,"
          + " name = ?, trigger = ?, redrive_count = ? WHERE app = ? AND day = ?"
          + " AND started_at = ? AND execution_id = ?";
  private static final String LIST_END =
      "UPDATE %s.executions_by_app USING TTL ? AND TIMESTAMP ? SET workflow = ?, status = ?,"
          + " finished_at = ?, error = ?, cause = ? WHERE app = ? AND day = ? AND started_at = ?"
          + " AND execution_id = ?";
  private static final String FIND =
      "SELECT execution_id, app, workflow, status, input, output, error, cause, name, trigger,"
          + " started_at, finished_at, redrive_count, history_truncated FROM %s.executions"
          + " WHERE execution_id = ?";

  private CompletionStage<AsyncResultSet> execute(BoundStatement statement) {
    try {
      return session.executeAsync(statement.setConsistencyLevel(CONSISTENCY));
    } catch (DriverException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** The statements that make and migrate this class's tables in {@code keyspace}. */
  static List<String> schema(String keyspace) {
    return List.of(
        addColumn(keyspace, CassandraSchema.EXECUTIONS, "name text"),
        addColumn(keyspace, CassandraSchema.EXECUTIONS, "started_at timestamp"),
        addColumn(keyspace, CassandraSchema.EXECUTIONS, "redrive_count int"),
        addColumn(keyspace, CassandraSchema.EXECUTIONS, "history_count int"),
        addColumn(keyspace, CassandraSchema.EXECUTIONS, "history_truncated boolean"),
        // issue 23: the trigger that started an execution (JSON), on the row and its listing row
        addColumn(keyspace, CassandraSchema.EXECUTIONS, "trigger text"),
        "CREATE TABLE IF NOT EXISTS "
            + keyspace
            + "."
            + CassandraSchema.EXECUTIONS_BY_APP
            + " (app text, day int, started_at timestamp, execution_id text, workflow text,"
            + " status text, name text, trigger text, finished_at timestamp, error text,"
            + " cause text, redrive_count int, PRIMARY KEY ((app, day), started_at, execution_id))"
            + " WITH CLUSTERING ORDER BY (started_at DESC, execution_id DESC)",
        addColumn(keyspace, CassandraSchema.EXECUTIONS_BY_APP, "trigger text"),
        "CREATE TABLE IF NOT EXISTS "
            + keyspace
            + "."
            + CassandraSchema.EXECUTION_HISTORY
            + " (execution_id text, at_ms bigint, message text, idx int, event text,"
            + " PRIMARY KEY ((execution_id), at_ms, message, idx))");
  }

  static String addColumn(String keyspace, String table, String column) {
    return "ALTER TABLE " + keyspace + "." + table + " ADD IF NOT EXISTS " + column;
  }
}
