package dev.sand.store;

import dev.sand.contracts.ExecutionStatus;
import java.time.Instant;

/**
 * One row of the listing of an application's executions (table {@code executions_by_app}).
 *
 * @param executionId the execution
 * @param app its application
 * @param workflow its workflow
 * @param status where it is
 * @param name the client-chosen name, or null
 * @param trigger the trigger that started it as compact JSON (see {@link ExecutionRecord}), or null
 * @param startedAt when it started
 * @param finishedAt when it ended, or null while RUNNING
 * @param error the error name when FAILED or ABORTED, else null
 * @param cause the cause when FAILED or ABORTED, else null
 * @param redriveCount how many times it was redriven
 */
public record ExecutionSummary(
    String executionId,
    String app,
    String workflow,
    ExecutionStatus status,
    String name,
    String trigger,
    Instant startedAt,
    Instant finishedAt,
    String error,
    String cause,
    int redriveCount) {
  public ExecutionSummary {
    if (executionId == null || app == null || status == null || startedAt == null) {
      throw new IllegalArgumentException(
          "execution summary "
              + executionId
              + ": execution id, app, status and start time are required");
    }
  }

  /** Where a listing continues after this row. */
  public ExecutionQuery.Cursor cursor() {
    return new ExecutionQuery.Cursor(startedAt.toEpochMilli(), executionId);
  }
}
