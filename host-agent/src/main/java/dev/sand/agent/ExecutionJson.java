package dev.sand.agent;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.ResultDocument;
import dev.sand.service.JsonHttp;
import dev.sand.store.ExecutionRecord;
import dev.sand.store.ExecutionSummary;
import dev.sand.store.HistoryEntry;

/**
 * Execution records as the API shows them (frontend/openapi.yaml): the result document of one
 * execution, the summary of a listing row, a history event.
 */
final class ExecutionJson {
  // what a FAILED or ABORTED record shows when its error was not recorded (never expected)
  private static final String UNKNOWN_ERROR = "States.Runtime";
  // the trigger that started an execution (decision 0034): an object, absent when none did
  private static final String TRIGGER = "trigger";

  private ExecutionJson() {}

  /**
   * The execution document of {@code record}: its result document (status, output or error and
   * cause, start and end, and its input, name and redrive count when recorded) and the {@code
   * trigger} that started it, when one did.
   */
  static ObjectNode document(ExecutionRecord record) {
    ObjectNode doc = result(record).toJson();
    putTrigger(doc, record.trigger());
    return doc;
  }

  private static ResultDocument result(ExecutionRecord record) {
    boolean failed =
        record.status() == ExecutionStatus.FAILED || record.status() == ExecutionStatus.ABORTED;
    String error = record.error();
    if (failed && (error == null || error.isEmpty())) {
      error = UNKNOWN_ERROR;
    }
    return new ResultDocument(
        record.executionId(),
        record.app(),
        record.workflow(),
        record.status(),
        record.startedAt() == null ? 0 : record.startedAt().toEpochMilli(),
        record.finishedAt() == null || record.status() == ExecutionStatus.RUNNING
            ? 0
            : record.finishedAt().toEpochMilli(),
        record.status() == ExecutionStatus.SUCCEEDED ? json(record.output()) : null,
        failed ? error : null,
        failed ? (record.cause() == null ? "" : record.cause()) : null,
        null,
        json(record.input()),
        record.name(),
        record.redriveCount());
  }

  /**
   * A listing row: {@code execution_id, app, workflow, status, started_ms}, and when set {@code
   * name, trigger, finished_ms, error, cause, redrive_count}.
   */
  static ObjectNode summary(ExecutionSummary row) {
    ObjectNode json = JsonHttp.MAPPER.createObjectNode();
    json.put("execution_id", row.executionId());
    json.put("app", row.app());
    json.put("workflow", row.workflow() == null ? "" : row.workflow());
    json.put("status", row.status().name());
    if (row.name() != null) {
      json.put("name", row.name());
    }
    putTrigger(json, row.trigger());
    json.put("started_ms", row.startedAt().toEpochMilli());
    if (row.finishedAt() != null && row.status() != ExecutionStatus.RUNNING) {
      json.put("finished_ms", row.finishedAt().toEpochMilli());
    }
    if (row.error() != null && row.status() != ExecutionStatus.RUNNING) {
      json.put("error", row.error());
      json.put("cause", row.cause() == null ? "" : row.cause());
    }
    if (row.redriveCount() > 0) {
      json.put("redrive_count", row.redriveCount());
    }
    return json;
  }

  /** Sets {@code trigger} (recorded JSON text) on {@code json} when it is a recorded object. */
  private static void putTrigger(ObjectNode json, String trigger) {
    JsonNode parsed = json(trigger);
    if (parsed != null && parsed.isObject()) {
      json.set(TRIGGER, parsed);
    }
  }

  /** A history event as it was recorded (a JSON object; text that is not JSON as a string). */
  static JsonNode event(HistoryEntry entry) {
    JsonNode event = json(entry.event());
    return event == null ? JsonHttp.MAPPER.getNodeFactory().nullNode() : event;
  }

  /** {@code text} parsed as JSON; text that is not JSON as a JSON string; null for null. */
  static JsonNode json(String text) {
    if (text == null) {
      return null;
    }
    try {
      JsonNode parsed = JsonHttp.MAPPER.readTree(text);
      return parsed == null || parsed.isMissingNode() ? null : parsed;
    } catch (JsonProcessingException e) {
      return JsonHttp.MAPPER.getNodeFactory().textNode(text);
    }
  }
}
