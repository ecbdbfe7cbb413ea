package dev.sand.store.cassandra;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DriverException;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.store.ExecutionQuery;
import dev.sand.store.ExecutionSummary;
import dev.sand.store.StoreException;
import java.time.Clock;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

/**
 * Reads the listing of executions ({@link CassandraSchema#EXECUTIONS_BY_APP}) that {@link
 * ExecutionTable} writes: pages of an {@link ExecutionQuery}, newest first. Blocking; throws {@link
 * StoreException}. Thread-safe.
 */
final class ExecutionListing {
  private static final ConsistencyLevel CONSISTENCY = Statements.CONSISTENCY;
  // a listing reads one (app, day) partition in pages of this many rows
  private static final int LIST_PAGE = 200;

  private static final String LIST_COLUMNS =
      "SELECT execution_id, workflow, status, name, trigger, started_at, finished_at, error, cause,"
          + " redrive_count FROM %s.executions_by_app WHERE app = ? AND day = ?";
  private static final String LIST_ALL = LIST_COLUMNS;
  private static final String LIST_AFTER =
      LIST_COLUMNS + " AND (started_at, execution_id) < (?, ?)";

  private final CqlSession session;
  private final Statements statements;
  private final String where;
  private final int retentionDays;
  private final Clock clock;

  ExecutionListing(
      CqlSession session, Statements statements, String where, int retentionDays, Clock clock) {
    this.session = session;
    this.statements = statements;
    this.where = where;
    this.retentionDays = retentionDays;
    this.clock = clock;
  }

  /** See {@link ExecutionTable#list}. */
  ExecutionQuery.Page list(ExecutionQuery query) {
    int want = query.limit() + 1; // one more tells whether a next page exists
    List<ExecutionSummary> found = new ArrayList<>();
    long today = LocalDate.now(clock.withZone(ZoneOffset.UTC)).toEpochDay();
    // a host whose clock runs ahead may have started something "tomorrow"
    long first =
        query.after().isPresent()
            ? ExecutionTable.day(Instant.ofEpochMilli(query.after().get().startedMs()))
            : today + 1;
    long last = today - retentionDays;
    if (query.since().isPresent()) {
      last = Math.max(last, ExecutionTable.day(query.since().get()));
    }
    Comparator<ExecutionSummary> newestFirst =
        Comparator.comparing(ExecutionSummary::startedAt)
            .thenComparing(ExecutionSummary::executionId)
            .reversed();
    List<String> apps = query.apps().stream().sorted().toList();
    for (long day = first; day >= last && found.size() < want; day--) {
      // the day's partitions of every app at once: one round trip per day, not per app and day
      int need = want - found.size();
      List<CompletableFuture<List<ExecutionSummary>>> scans = new ArrayList<>();
      for (String app : apps) {
        scans.add(scan(app, (int) day, query, need));
      }
      List<ExecutionSummary> ofDay = new ArrayList<>();
      for (CompletableFuture<List<ExecutionSummary>> scan : scans) {
        ofDay.addAll(await(scan));
      }
      ofDay.sort(newestFirst);
      found.addAll(ofDay.subList(0, Math.min(ofDay.size(), need)));
    }
    if (found.size() > query.limit()) {
      List<ExecutionSummary> page = found.subList(0, query.limit());
      return new ExecutionQuery.Page(page, Optional.of(page.get(page.size() - 1).cursor()));
    }
    return new ExecutionQuery.Page(found, Optional.empty());
  }

  /** Up to {@code max} rows of one (app, day) partition that {@code query} selects, in order. */
  private CompletableFuture<List<ExecutionSummary>> scan(
      String app, int day, ExecutionQuery query, int max) {
    BoundStatement select =
        query.after().isPresent()
            ? statements
                .prepare(LIST_AFTER)
                .bind(
                    app,
                    day,
                    Instant.ofEpochMilli(query.after().get().startedMs()),
                    query.after().get().executionId())
            : statements.prepare(LIST_ALL).bind(app, day);
    List<ExecutionSummary> rows = new ArrayList<>();
    return execute(select.setPageSize(Math.min(LIST_PAGE, Math.max(max, 10))))
        .thenCompose(page -> collect(page, app, query, max, rows))
        .toCompletableFuture();
  }

  /**
   * Adds the rows of {@code page} that {@code query} selects to {@code rows}, then those of the
   * partition's next pages, until {@code max} (on the driver's thread: nothing here blocks).
   */
  private static CompletionStage<List<ExecutionSummary>> collect(
      AsyncResultSet page, String app, ExecutionQuery query, int max, List<ExecutionSummary> rows) {
    for (Row row : page.currentPage()) {
      Instant started = row.getInstant("started_at");
      if (query.since().isPresent() && started.isBefore(query.since().get())) {
        return CompletableFuture.completedFuture(rows); // newest first: the rest are older
      }
      ExecutionStatus status = ExecutionStatus.valueOf(row.getString("status"));
      if (query.status().isPresent() && query.status().get() != status) {
        continue;
      }
      rows.add(
          new ExecutionSummary(
              row.getString("execution_id"),
              app,
              row.getString("workflow"),
              status,
              row.getString("name"),
              row.getString("trigger"),
              started,
              row.getInstant("finished_at"),
              row.getString("error"),
              row.getString("cause"),
              row.isNull("redrive_count") ? 0 : row.getInt("redrive_count")));
      if (rows.size() >= max) {
        return CompletableFuture.completedFuture(rows);
      }
    }
    return page.hasMorePages()
        ? page.fetchNextPage().thenCompose(next -> collect(next, app, query, max, rows))
        : CompletableFuture.completedFuture(rows);
  }

  /**
   * The value of {@code stage}, waiting for it.
   *
   * @throws StoreException when Cassandra refused or did not answer
   */
  private <T> T await(CompletableFuture<T> stage) {
    try {
      return stage.join();
    } catch (CompletionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      throw new StoreException("cassandra at " + where + ": " + cause.getMessage(), cause);
    }
  }

  private CompletionStage<AsyncResultSet> execute(BoundStatement statement) {
    try {
      return session.executeAsync(statement.setConsistencyLevel(CONSISTENCY));
    } catch (DriverException e) {
      return CompletableFuture.failedFuture(e);
    }
  }
}
