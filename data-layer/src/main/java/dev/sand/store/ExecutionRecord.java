package dev.sand.store;

import dev.sand.contracts.ExecutionStatus;
import java.time.Instant;

/**
 * The durable record of one finished execution (Cassandra table {@code executions}).
 *
 * @param executionId the execution
 * @param app its application
 * @param workflow its workflow
 * @param status SUCCEEDED or FAILED (stored by name)
 * @param output the output JSON when it succeeded, else null
 * @param error the ASL error name when it failed, else null
 * @param cause the cause when it failed, else null
 * @param finishedAt when it ended
 */
public record ExecutionRecord(
    String executionId,
    String app,
    String workflow,
    ExecutionStatus status,
    String output,
    String error,
    String cause,
    Instant finishedAt) {
  public ExecutionRecord {
    if (executionId == null || executionId.isBlank()) {
      throw new IllegalArgumentException("execution record: execution id must be non-blank");
    }
    if (status != ExecutionStatus.SUCCEEDED && status != ExecutionStatus.FAILED) {
      throw new IllegalArgumentException(
          "execution record "
              + executionId
              + ": status must be SUCCEEDED or FAILED, got "
              + status);
    }
  }
}
