package dev.sand.store;

import dev.sand.contracts.ExecutionStatus;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * A listing of executions, newest first.
 *
 * @param apps the applications whose executions are listed (the caller may use them all)
 * @param status only executions in this status, or empty for all
 * @param since only executions started at or after this time, or empty for the retention window
 * @param limit at most this many rows, 1..{@value #MAX_LIMIT}
 * @param after continue after this row (a page token), or empty for the newest
 */
public record ExecutionQuery(
    Set<String> apps,
    Optional<ExecutionStatus> status,
    Optional<Instant> since,
    int limit,
    Optional<Cursor> after) {
  public static final int MAX_LIMIT = 1000;

  public ExecutionQuery {
    apps = Set.copyOf(apps);
    if (limit < 1 || limit > MAX_LIMIT) {
      throw new IllegalArgumentException("limit must be 1.." + MAX_LIMIT + ", got " + limit);
    }
  }

  /**
   * Where a listing stopped: the last row returned (rows are ordered by start time, then execution
   * id, both descending).
   *
   * @param startedMs the row's start, epoch ms
   * @param executionId the row's execution
   */
  public record Cursor(long startedMs, String executionId) {
    public Cursor {
      if (executionId == null || executionId.isEmpty()) {
        throw new IllegalArgumentException("cursor: execution id is missing");
      }
    }
  }

  /**
   * One page of a listing.
   *
   * @param rows the executions, newest first
   * @param next where the next page starts, or empty when this is the last one
   */
  public record Page(List<ExecutionSummary> rows, Optional<Cursor> next) {
    public Page {
      rows = List.copyOf(rows);
    }
  }
}
