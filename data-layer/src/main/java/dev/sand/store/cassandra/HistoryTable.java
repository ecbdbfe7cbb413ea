package dev.sand.store.cassandra;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import dev.sand.store.HistoryEntry;
import dev.sand.store.StoreException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Executions' history events ({@link CassandraSchema#EXECUTION_HISTORY}): one partition per
 * execution, events ordered by {@code at_ms}, then the message they came in, then their place in
 * it. Re-recording a message (a batch read again after a refused commit) writes the same rows.
 *
 * <p><b>The cap.</b> At most {@link #cap} events per execution are kept; later ones are dropped and
 * the execution is marked {@code history_truncated}. The count lives in the execution's row ({@code
 * history_count}): it is read once per execution and then kept in memory by the recorder that holds
 * the execution's partition of {@code sand.history} (events are keyed by execution id, so one
 * recorder at a time sees an execution). A batch recorded twice counts twice, so the cap errs on
 * the side of keeping fewer events, never more.
 *
 * <p>Thread-safe; {@link #writes} is meant for one recorder thread (the counts it keeps in memory
 * are updated after Cassandra took a batch).
 */
public final class HistoryTable {
  /** The most events recorded per execution (API contract of issue 13). */
  public static final int DEFAULT_CAP = 10_000;

  private static final ConsistencyLevel CONSISTENCY = Statements.CONSISTENCY;
  // how many executions' counts are remembered between batches
  private static final int KNOWN_COUNTS = 10_000;

  private final int ttlSeconds;
  private final int cap;
  private final Statements statements;
  private final Map<String, Integer> counts =
      java.util.Collections.synchronizedMap(
          new LinkedHashMap<>(16, 0.75f, true) {
            private static final long serialVersionUID = 1L;

            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Integer> eldest) {
              return size() > KNOWN_COUNTS;
            }
          });

  HistoryTable(CqlSession session, String keyspace, String where, int ttlSeconds, int cap) {
    this.statements = new Statements(session, keyspace, where);
    this.ttlSeconds = ttlSeconds;
    this.cap = cap;
  }

  /**
   * Adds to {@code writes} what records {@code entries} (in order per execution) up to each
   * execution's cap: the events and each execution's count. Reads the counts of executions not seen
   * before (blocking, one query each), but for those in {@code opened}: their ExecutionStarted is
   * among the entries (the recorder parsed it), so nothing was recorded before. A restart of an
   * execution from its input after its host was lost (decision 0015) starts its count again: its
   * cap errs towards keeping more of that execution's events.
   *
   * @return what to run once Cassandra took the writes: it remembers the new counts
   * @throws StoreException when a count cannot be read
   */
  Runnable writes(List<HistoryEntry> entries, Set<String> opened, List<Batches.Write> writes) {
    Map<String, List<HistoryEntry>> byExecution = new LinkedHashMap<>();
    for (HistoryEntry entry : entries) {
      byExecution.computeIfAbsent(entry.executionId(), id -> new ArrayList<>()).add(entry);
    }
    PreparedStatement insert = statements.prepare(INSERT);
    PreparedStatement count = statements.prepare(COUNT);
    PreparedStatement countTruncated = statements.prepare(COUNT_TRUNCATED);
    Map<String, Integer> after = new LinkedHashMap<>();
    for (Map.Entry<String, List<HistoryEntry>> execution : byExecution.entrySet()) {
      String id = execution.getKey();
      int before = known(id, opened.contains(id));
      List<HistoryEntry> kept = admitted(before, execution.getValue(), cap);
      for (HistoryEntry entry : kept) {
        writes.add(
            new Batches.Write(
                insert
                    .bind(id, entry.atMs(), entry.batch(), entry.index(), entry.event(), ttlSeconds)
                    .setConsistencyLevel(CONSISTENCY),
                Batches.size(entry.event(), entry.batch())));
      }
      int total = before + kept.size();
      boolean truncated = kept.size() < execution.getValue().size();
      writes.add(
          new Batches.Write(
              (truncated ? countTruncated : count)
                  .bind(ttlSeconds, total, id)
                  .setConsistencyLevel(CONSISTENCY),
              Batches.size()));
      after.put(id, total);
    }
    return () -> counts.putAll(after);
  }

  /**
   * The events of {@code batch} an execution with {@code before} recorded events keeps under {@code
   * cap}: the first ones, up to the cap.
   */
  static List<HistoryEntry> admitted(int before, List<HistoryEntry> batch, int cap) {
    int room = Math.max(0, cap - before);
    return batch.size() <= room ? batch : batch.subList(0, room);
  }

  private int known(String executionId, boolean opened) {
    Integer count = counts.get(executionId);
    if (count != null) {
      return count;
    }
    if (opened) {
      return 0; // its first event is in this record: nothing recorded before, no need to ask
    }
    Row row = statements.run(statements.prepare(READ_COUNT).bind(executionId)).one();
    return row == null || row.isNull("history_count") ? 0 : row.getInt("history_count");
  }

  /**
   * Up to {@code limit} events of {@code executionId} after {@code after} (null: from the first).
   * Blocking.
   *
   * @throws StoreException when no node answers
   */
  public HistoryEntry.Page page(String executionId, HistoryEntry.Cursor after, int limit) {
    ResultSet rows =
        after == null
            ? statements.run(statements.prepare(PAGE).bind(executionId, limit + 1))
            : statements.run(
                statements
                    .prepare(PAGE_AFTER)
                    .bind(executionId, after.atMs(), after.batch(), after.index(), limit + 1));
    List<HistoryEntry> entries = new ArrayList<>();
    for (Row row : rows) {
      entries.add(
          new HistoryEntry(
              executionId,
              row.getLong("at_ms"),
              row.getString("message"),
              row.getInt("idx"),
              row.getString("event")));
    }
    Row count = statements.run(statements.prepare(READ_COUNT).bind(executionId)).one();
    boolean truncated =
        count != null
            && !count.isNull("history_truncated")
            && count.getBoolean("history_truncated");
    if (entries.size() > limit) {
      List<HistoryEntry> page = entries.subList(0, limit);
      return new HistoryEntry.Page(page, page.get(limit - 1).cursor(), truncated);
    }
    return new HistoryEntry.Page(entries, null, truncated);
  }

  private static final String INSERT =
      "INSERT INTO %s.execution_history (execution_id, at_ms, message, idx, event)"
          + " VALUES (?, ?, ?, ?, ?) USING TTL ?";
  private static final String COUNT =
      "UPDATE %s.executions USING TTL ? SET history_count = ? WHERE execution_id = ?";
  private static final String COUNT_TRUNCATED =
      "UPDATE %s.executions USING TTL ? SET history_count = ?, history_truncated = true"
          + " WHERE execution_id = ?";
  private static final String READ_COUNT =
      "SELECT history_count, history_truncated FROM %s.executions WHERE execution_id = ?";
  private static final String PAGE =
      "SELECT at_ms, message, idx, event FROM %s.execution_history WHERE execution_id = ? LIMIT ?";
  private static final String PAGE_AFTER =
      "SELECT at_ms, message, idx, event FROM %s.execution_history WHERE execution_id = ?"
          + " AND (at_ms, message, idx) > (?, ?, ?) LIMIT ?";
}
