package dev.sand.store;

import dev.sand.contracts.ExecutionStatus;
import java.time.Instant;

/**
 * The durable record of one execution as read back (Cassandra table {@code executions}): what its
 * start ({@link ExecutionStart}) and its end ({@link ExecutionEnd}) recorded, whichever arrived.
 *
 * @param executionId the execution
 * @param app its application (null when only its history was recorded so far)
 * @param workflow its workflow, or null
 * @param status RUNNING, SUCCEEDED, FAILED or ABORTED (stored by name); RUNNING when only the start
 *     or only history is known
 * @param input its input JSON when its start was recorded, else null
 * @param output the output JSON when it succeeded, else null
 * @param error the ASL error name when it failed or was aborted, else null
 * @param cause the cause when it failed or was aborted, else null
 * @param name the client-chosen name of an idempotent start, else null
 * @param trigger the trigger that started it, as compact JSON ({@code {"name", "kind", "time"}} or
 *     {@code {"name", "kind", "topic", "partition", "offset"}}; decision 0034), else null
 * @param startedAt when it started (its ExecutionStarted event), else null
 * @param finishedAt when it ended, else null
 * @param redriveCount how many times it was redriven
 * @param historyTruncated whether its history reached the cap and later events were dropped
 */
public record ExecutionRecord(
    String executionId,
    String app,
    String workflow,
    ExecutionStatus status,
    String input,
    String output,
    String error,
    String cause,
    String name,
    String trigger,
    Instant startedAt,
    Instant finishedAt,
    int redriveCount,
    boolean historyTruncated) {
  public ExecutionRecord {
    if (executionId == null || executionId.isBlank()) {
      throw new IllegalArgumentException("execution record: execution id must be non-blank");
    }
    if (status == null) {
      throw new IllegalArgumentException("execution record " + executionId + ": status is missing");
    }
    if (redriveCount < 0) {
      throw new IllegalArgumentException(
          "execution record " + executionId + ": redrive count must be >= 0, got " + redriveCount);
    }
  }
}
