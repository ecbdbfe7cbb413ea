package dev.sand.store;

import dev.sand.contracts.ExecutionStatus;
import java.time.Instant;

/**
 * What an execution's result (a RESULT or ERROR event on {@code sand.results}) records.
 *
 * @param executionId the execution
 * @param app its application
 * @param workflow its workflow
 * @param status SUCCEEDED, FAILED or ABORTED
 * @param output the output JSON when it succeeded, else null
 * @param error the ASL error name when it failed or was aborted, else null
 * @param cause the cause when it failed or was aborted, else null
 * @param finishedAt when it ended
 * @param startedAt when it was accepted, when its result document says ({@code started_ms}), else
 *     null: then its listing row waits for its start to be recorded
 */
public record ExecutionEnd(
    String executionId,
    String app,
    String workflow,
    ExecutionStatus status,
    String output,
    String error,
    String cause,
    Instant finishedAt,
    Instant startedAt) {
  public ExecutionEnd {
    if (executionId == null || executionId.isBlank()) {
      throw new IllegalArgumentException("execution end: execution id must be non-blank");
    }
    if (status == null || status == ExecutionStatus.RUNNING) {
      throw new IllegalArgumentException(
          "execution end "
              + executionId
              + ": status must be SUCCEEDED, FAILED or ABORTED, got "
              + status);
    }
    if (finishedAt == null) {
      throw new IllegalArgumentException("execution end " + executionId + ": time is missing");
    }
  }
}
