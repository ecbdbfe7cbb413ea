package dev.sand.contracts;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The outcome of a task wait (callbacks, decision 0033): what {@code sand.task_waits.outcome} holds
 * and what the fired TIMER carries in {@code HEADER_CALLBACK_OUTCOME} for the engine: {@code
 * {"output": <JSON>}} when it succeeded, {@code {"error": e, "cause": c}} otherwise. Built and
 * checked here only, by the frontend (callbacks) and the host agent (callbacks it is forwarded,
 * timeouts), so both write one shape. Pure and thread-safe.
 */
public final class TaskOutcomes {
  /** The longest error name a failure callback may give (characters), as Step Functions. */
  public static final int MAX_ERROR_CHARS = 256;

  /** The longest cause a failure callback may give (characters), as Step Functions. */
  public static final int MAX_CAUSE_CHARS = 32768;

  /** The error of a wait whose TimeoutSeconds passed. */
  public static final String TIMEOUT = "States.Timeout";

  /** The error of a wait whose HeartbeatSeconds passed without a heartbeat. */
  public static final String HEARTBEAT_TIMEOUT = "States.HeartbeatTimeout";

  /** The error of a wait the agent cannot run (a malformed callback header, a forged token). */
  public static final String RUNTIME = "States.Runtime";

  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  private TaskOutcomes() {}

  /** {@code {"output": output}}. */
  public static ObjectNode succeeded(JsonNode output) {
    ObjectNode outcome = NODES.objectNode();
    outcome.set("output", output == null ? NODES.nullNode() : output);
    return outcome;
  }

  /**
   * {@code {"error": error, "cause": cause}}; a missing one is the empty string (as an event's
   * unset error and cause are).
   *
   * @throws IllegalArgumentException naming the field when it is over its limit
   */
  public static ObjectNode failed(String error, String cause) {
    String e = error == null ? "" : error;
    String c = cause == null ? "" : cause;
    if (e.length() > MAX_ERROR_CHARS) {
      throw new IllegalArgumentException(
          "error is " + e.length() + " characters, at most " + MAX_ERROR_CHARS);
    }
    if (c.length() > MAX_CAUSE_CHARS) {
      throw new IllegalArgumentException(
          "cause is " + c.length() + " characters, at most " + MAX_CAUSE_CHARS);
    }
    ObjectNode outcome = NODES.objectNode();
    outcome.put("error", e);
    outcome.put("cause", c);
    return outcome;
  }

  /**
   * {@code outcome} if it is what a wait ending with {@code status} holds: SUCCEEDED an object with
   * {@code output}; FAILED and TIMED_OUT an object with string {@code error} and {@code cause}
   * within their limits.
   *
   * @throws IllegalArgumentException naming what is wrong
   */
  public static ObjectNode check(TaskWaitStatus status, JsonNode outcome) {
    if (!status.ended()) {
      throw new IllegalArgumentException("a WAITING task has no outcome");
    }
    if (outcome == null || !outcome.isObject()) {
      throw new IllegalArgumentException("outcome must be a JSON object");
    }
    if (status == TaskWaitStatus.SUCCEEDED) {
      if (!outcome.has("output") || outcome.size() != 1) {
        throw new IllegalArgumentException(
            "the outcome of a SUCCEEDED task is {\"output\": <JSON>}");
      }
      return (ObjectNode) outcome;
    }
    JsonNode error = outcome.get("error");
    JsonNode cause = outcome.get("cause");
    if (error == null || !error.isTextual() || cause == null || !cause.isTextual()) {
      throw new IllegalArgumentException(
          "the outcome of a " + status + " task is {\"error\": string, \"cause\": string}");
    }
    return failed(error.asText(), cause.asText());
  }
}
