package dev.sand.frontend;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.contracts.HistoryTypes;
import dev.sand.service.JsonHttp;
import java.nio.charset.StandardCharsets;
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
 * @param kept when the state is a Parallel or Map: the outputs of its branches or items that
 *     succeeded since it was entered, by slot (an object; empty when none): the service's
 *     RedriveExecution reruns "only the iterations and branches that failed or aborted"
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
    ObjectNode kept,
    JsonNode executionInput,
    long startedMs,
    String name,
    int count) {

  /**
   * The most a redrive carries of kept branch and item outputs: its INVOKE event, headers included,
   * is one Kafka record, under the broker's 1 MiB default with room for the rest.
   */
  static final int MAX_KEPT_BYTES = 512 * 1024;

  /**
   * The redrive of execution {@code id} with history {@code events} (in order).
   *
   * @throws Refused 409 naming why when the history cannot say where to resume
   */
  static Redrive of(String id, List<JsonNode> events) throws Refused {
    JsonNode started = null;
    int count = 0;
    JsonNode open = null; // the StateEntered of the top-level state in progress
    // The branch or item outputs of the top-level state entered last: since that entry, and
    // across the redrives that entered it again keeping them.
    ObjectNode kept = JsonHttp.MAPPER.createObjectNode();
    String keptOf = null;
    boolean redriveEntry = false;
    for (JsonNode event : events) {
      String type = event.path("type").asText();
      if (HistoryTypes.EXECUTION_STARTED.equals(type)) {
        started = event;
        open = null;
        keptOf = null;
      } else if (HistoryTypes.EXECUTION_REDRIVEN.equals(type)) {
        count = Math.max(count, event.path("redrive_count").asInt(0));
        open = null;
        redriveEntry = true;
      } else if (topLevel(event) && HistoryTypes.STATE_ENTERED.equals(type)) {
        open = event;
        String state = event.path("state").asText();
        if (!(redriveEntry && state.equals(keptOf))) {
          kept.removeAll(); // a new entry (or a Retry's) runs every branch or item
          keptOf = state;
        }
        redriveEntry = false;
      } else if (HistoryTypes.BRANCH_SUCCEEDED.equals(type) && keptOf != null) {
        int slot = slotOf(event.path("path").asText(""), keptOf);
        if (slot >= 0 && !truncated(event.path("output"))) {
          kept.set(Integer.toString(slot), event.path("output"));
        }
      } else if (topLevel(event)
          && HistoryTypes.STATE_EXITED.equals(type)
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
    // `kept` belongs to `open`: each top-level StateEntered sets both
    int keptBytes = kept.toString().getBytes(StandardCharsets.UTF_8).length;
    if (keptBytes > MAX_KEPT_BYTES) {
      throw refused(
          "execution '"
              + id
              + "': the outputs of the "
              + kept.size()
              + " branches or items of state '"
              + open.path("state").asText()
              + "' that succeeded take "
              + keptBytes
              + " bytes, more than a redrive carries ("
              + MAX_KEPT_BYTES
              + "), and they are not run again; invoke it again");
    }
    long startedMs = started.path("started_ms").asLong(started.path("at_ms").asLong(0));
    JsonNode name = started.get("name");
    return new Redrive(
        started.path("workflow").asText(),
        open.path("state").asText(),
        stateInput,
        variables,
        kept,
        executionInput,
        startedMs,
        name == null || name.isNull() ? null : name.asText(),
        count + 1);
  }

  /**
   * The slot of a branch or item of top-level state {@code state} that {@code path} names ({@code
   * Fan[2]}: 2), or -1 for any other path (a nested one, another state's).
   */
  static int slotOf(String path, String state) {
    if (!path.startsWith(state + "[") || !path.endsWith("]")) {
      return -1;
    }
    String digits = path.substring(state.length() + 1, path.length() - 1);
    if (digits.isEmpty() || digits.length() > 9 || !digits.chars().allMatch(Character::isDigit)) {
      return -1;
    }
    return Integer.parseInt(digits);
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
