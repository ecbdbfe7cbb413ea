package dev.sand.contracts;

import java.util.regex.Pattern;

/**
 * What a task token names (callbacks, decision 0033): the wait of one entry of a Task state whose
 * Resource ends in {@code .waitForTaskToken}. Validating: a token naming anything else cannot be
 * minted, and {@link TaskTokens#verify} refuses one that names it.
 *
 * @param app the application ({@code NAME_APP})
 * @param executionId the execution ({@code NAME_EXECUTION})
 * @param waitId the engine's deterministic id of that entry of the state (e.g. {@code
 *     exec-1/Approve#3}); any non-empty text without a newline, which separates the fields
 */
public record TaskToken(String app, String executionId, String waitId) {
  private static final Pattern APP = Pattern.compile(contractsConstants.NAME_APP);
  private static final Pattern EXECUTION = Pattern.compile(contractsConstants.NAME_EXECUTION);

  public TaskToken {
    if (app == null || !APP.matcher(app).matches()) {
      throw new IllegalArgumentException(
          "task token: application must match " + contractsConstants.NAME_APP + ", got " + app);
    }
    if (executionId == null || !EXECUTION.matcher(executionId).matches()) {
      throw new IllegalArgumentException(
          "task token: execution must match "
              + contractsConstants.NAME_EXECUTION
              + ", got "
              + executionId);
    }
    if (waitId == null || waitId.isEmpty() || waitId.indexOf('\n') >= 0) {
      throw new IllegalArgumentException(
          "task token: wait id must be non-empty text without a newline");
    }
  }
}
