package dev.sand.store;

import java.time.Instant;

/**
 * What an execution's ExecutionStarted or ExecutionRedriven history event records: the execution is
 * RUNNING from {@code at}.
 *
 * @param executionId the execution
 * @param app its application
 * @param workflow its workflow
 * @param input its input JSON (ExecutionStarted), or null (a redrive keeps the recorded input)
 * @param name the client-chosen name of an idempotent start, or null
 * @param trigger the ExecutionStarted event's {@code trigger} as compact JSON when a trigger
 *     started it (decision 0034), else null (always for a redrive: the first start's stays)
 * @param startedAt when it was accepted (the event's {@code started_ms}, else its {@code at_ms}):
 *     the start time shown and the key of its listing row; a redrive keeps the first start's
 * @param at when the event happened ({@code at_ms}): the timestamp of the status it writes
 * @param redriveCount 0 for ExecutionStarted, the redrive's number for ExecutionRedriven
 */
public record ExecutionStart(
    String executionId,
    String app,
    String workflow,
    String input,
    String name,
    String trigger,
    Instant startedAt,
    Instant at,
    int redriveCount) {
  public ExecutionStart {
    if (executionId == null || executionId.isBlank()) {
      throw new IllegalArgumentException("execution start: execution id must be non-blank");
    }
    if (app == null || app.isBlank()) {
      throw new IllegalArgumentException("execution start " + executionId + ": app is missing");
    }
    if (at == null || startedAt == null) {
      throw new IllegalArgumentException("execution start " + executionId + ": time is missing");
    }
    if (redriveCount < 0) {
      throw new IllegalArgumentException(
          "execution start " + executionId + ": redrive count must be >= 0, got " + redriveCount);
    }
  }

  /** Whether this is a redrive (ExecutionRedriven) rather than the first start. */
  public boolean redriven() {
    return redriveCount > 0;
  }
}
