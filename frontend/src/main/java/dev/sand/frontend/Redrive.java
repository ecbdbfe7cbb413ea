package dev.sand.frontend;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import org.eclipse.jetty.http.HttpStatus;

/**
 * Where a failed execution runs again (decision 0018), read from its history: the top-level state
 * entered last and never exited in the execution's latest run, with the input it had then.
 *
 * @param workflow the execution's workflow
 * @param state the top-level state to enter
 * @param stateInput its input then
 * @param variables the workflow variables it had then (an object; empty when it had none)
 * @param executionInput the execution's input ({@code $$.Execution.Input})
 * @param startedMs when the execution started ({@code $$.Execution.StartTime})
 * @param name the execution's name, or null
 * @param count this redrive's number (1 for the first)
 */
record Redrive(
    String workflow,
    String state,
    JsonNode stateInput,
    JsonNode variables,
    JsonNode executionInput,
    long startedMs,
    String name,
    int count) {

  /**
   * The redrive of execution {@code id} with history {@code events} (in order).
   *
   * @throws Refused 409 naming why when the history cannot say where to resume
   */
  static Redrive of(String id, List<JsonNode> events) throws Refused {
    JsonNode started = null;
    int count = 0;
    JsonNode open = null; // the StateEntered of the top-level state in progress
    for (JsonNode event : events) {
      String type = event.path("type").asText();
      if ("ExecutionStarted".equals(type)) {
        started = event;
        open = null;
      } else if ("ExecutionRedriven".equals(type)) {
        count = Math.max(count, event.path("redrive_count").asInt(0));
        open = null;
      } else if (topLevel(event) && "StateEntered".equals(type)) {
        open = event;
      } else if (topLevel(event)
          && "StateExited".equals(type)
          && open != null
          && open.path("state").asText().equals(event.path("state").asText())) {
        open = null;
      }
    }
    if (started == null || open == null) {
      throw refused(
          "execution '"
              + id
              + "' has no recorded state to redrive from (its app records no history, its"
              + " workflow is in the native format, or its record expired); invoke it again");
    }
    JsonNode executionInput = started.path("input");
    JsonNode stateInput = open.path("input");
    JsonNode variables =
        open.path("variables").isObject()
            ? open.path("variables")
            : JsonHttp.MAPPER.createObjectNode();
    if (truncated(executionInput) || truncated(stateInput) || truncated(variables)) {
      throw refused(
          "execution '"
              + id
              + "': the input of state '"
              + open.path("state").asText()
              + "', its variables or the execution's input were too large to be recorded in"
              + " full; invoke it again");
    }
    long startedMs = started.path("started_ms").asLong(started.path("at_ms").asLong(0));
    JsonNode name = started.get("name");
    return new Redrive(
        started.path("workflow").asText(),
        open.path("state").asText(),
        stateInput,
        variables,
        executionInput,
        startedMs,
        name == null || name.isNull() ? null : name.asText(),
        count + 1);
  }

  private static boolean topLevel(JsonNode event) {
    return event.path("path").asText("").isEmpty() && event.hasNonNull("state");
  }

  private static boolean truncated(JsonNode value) {
    return value.isObject() && value.path("truncated").asBoolean(false) && value.has("preview");
  }

  private static Refused refused(String message) {
    return new Refused(HttpStatus.CONFLICT_409, message);
  }
}
