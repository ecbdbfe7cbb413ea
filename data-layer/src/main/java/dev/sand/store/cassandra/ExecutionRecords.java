package dev.sand.store.cassandra;

import com.datastax.oss.driver.api.core.CqlSession;
import dev.sand.store.ExecutionEnd;
import dev.sand.store.ExecutionStart;
import dev.sand.store.HistoryEntry;
import dev.sand.store.StoreException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Records what a batch of the record topics says about executions — their starts, history events
 * and ends — in as few Cassandra requests as their size allows (decision 0030). On a small host
 * Cassandra's CPU is per request more than per row: one request per row cost about 1 ms of
 * Cassandra's CPU for each of the ~4.5 rows a one-grain call wrote. All writes of a batch go in
 * unlogged batches ({@link Batches}); Cassandra merges a batch's statements per partition, so the
 * start, the end and the history count of a short execution become one mutation of its row, and the
 * listing rows of one application and day one mutation of that partition.
 *
 * <p>Thread-safe; meant for one recorder thread (see {@link HistoryTable}).
 */
public final class ExecutionRecords {
  private final CqlSession session;
  private final ExecutionTable executions;
  private final HistoryTable history;

  ExecutionRecords(CqlSession session, ExecutionTable executions, HistoryTable history) {
    this.session = session;
    this.executions = executions;
    this.history = history;
  }

  /**
   * Records {@code starts} (RUNNING), {@code entries} (history events, in order per execution) and
   * {@code ends}. Reads the history counts of executions not seen before (blocking); the writes are
   * sent without waiting.
   *
   * @return a stage that completes when Cassandra took every write (exceptionally with the driver's
   *     exception, or a {@link StoreException}, when it did not)
   */
  public CompletionStage<Void> record(
      List<ExecutionStart> starts, List<HistoryEntry> entries, List<ExecutionEnd> ends) {
    List<Batches.Write> writes = new ArrayList<>();
    Set<String> relist = new LinkedHashSet<>();
    Runnable remember;
    try {
      remember = history.writes(entries, opened(starts), writes);
      executions.writes(starts, ends, writes, relist);
    } catch (StoreException e) {
      return CompletableFuture.failedFuture(e);
    }
    return Batches.send(session, writes)
        .thenCompose(taken -> executions.relist(relist))
        .thenRun(remember);
  }

  /** The executions whose ExecutionStarted (not a redrive's) is among {@code starts}. */
  static Set<String> opened(List<ExecutionStart> starts) {
    Set<String> opened = new LinkedHashSet<>();
    for (ExecutionStart start : starts) {
      if (start.redriveCount() == 0) {
        opened.add(start.executionId());
      }
    }
    return opened;
  }
}
