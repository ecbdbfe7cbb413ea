package dev.sand.store.cassandra;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DriverException;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.store.StoreException;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * When executions ended, as their rows say: what the global bus asks before it replays a lost
 * host's events (decision 0045). One single-partition read per execution, all sent at once.
 * Thread-safe.
 */
public final class ExecutionEnds {
  private static final String ENDS =
      "SELECT status, finished_at FROM %s.executions WHERE execution_id = ?";

  private final CqlSession session;
  private final Statements statements;
  private final String where;

  ExecutionEnds(CqlSession session, String keyspace, String where) {
    this.session = session;
    this.statements = new Statements(session, keyspace, where);
    this.where = where;
  }

  /**
   * The end of each of {@code executionIds} whose row says it ended (a status other than RUNNING,
   * with its end time); the others (running, unknown) are left out. Blocking, for at most {@code
   * wait}.
   *
   * @throws StoreException when a read fails or they all take longer than {@code wait}
   */
  public Map<String, Instant> of(Collection<String> executionIds, Duration wait) {
    PreparedStatement ends = statements.prepare(ENDS);
    List<String> ids = List.copyOf(executionIds);
    List<CompletableFuture<AsyncResultSet>> reads =
        ids.stream()
            .map(
                id -> {
                  try {
                    return session
                        .executeAsync(ends.bind(id).setConsistencyLevel(Statements.CONSISTENCY))
                        .toCompletableFuture();
                  } catch (DriverException e) {
                    return CompletableFuture.<AsyncResultSet>failedFuture(e);
                  }
                })
            .toList();
    try {
      CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new))
          .get(wait.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException | TimeoutException e) {
      Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
      throw new StoreException("cassandra at " + where + ": " + cause, cause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoreException("cassandra at " + where + ": interrupted", e);
    }
    Map<String, Instant> ended = new HashMap<>();
    for (int i = 0; i < ids.size(); i++) {
      Row row = reads.get(i).join().one();
      if (row == null || row.getString("status") == null || row.getInstant("finished_at") == null) {
        continue;
      }
      if (!ExecutionStatus.RUNNING.name().equals(row.getString("status"))) {
        ended.put(ids.get(i), row.getInstant("finished_at"));
      }
    }
    return ended;
  }
}
