package dev.sand.agent.bus;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;

/**
 * The header {@code HEADER_CALLBACK} a worker sets on the TIMER it parks for a task that waits for
 * its token (decision 0033): {@code {"token", "timeout_at": epoch ms, "heartbeat_ms": 0 or ms}}.
 *
 * @param token the task token (verified later, against the timer's app and execution)
 * @param timeoutAt when the wait times out (epoch ms)
 * @param heartbeatMs how long it may go without a heartbeat (ms); 0: no heartbeat needed
 */
record CallbackHeader(String token, long timeoutAt, long heartbeatMs) {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  CallbackHeader {
    if (heartbeatMs < 0) {
      throw new IllegalArgumentException("heartbeat_ms must be >= 0, got " + heartbeatMs);
    }
  }

  /**
   * The header {@code text}, checked.
   *
   * @throws IllegalArgumentException naming the field that is missing or of the wrong type
   */
  static CallbackHeader parse(String text) {
    JsonNode doc;
    try {
      doc = MAPPER.readTree(text == null ? "" : text);
    } catch (IOException e) {
      throw new IllegalArgumentException("sand-callback header is not JSON: " + e.getMessage(), e);
    }
    if (doc == null || !doc.isObject()) {
      throw new IllegalArgumentException("sand-callback header must be a JSON object");
    }
    JsonNode token = doc.get("token");
    if (token == null || !token.isTextual()) {
      throw new IllegalArgumentException("sand-callback header: token is required (a string)");
    }
    return new CallbackHeader(
        token.asText(), number(doc, "timeout_at"), number(doc, "heartbeat_ms"));
  }

  private static long number(JsonNode doc, String field) {
    JsonNode value = doc.get(field);
    if (value == null || !value.canConvertToLong() || !value.isIntegralNumber()) {
      throw new IllegalArgumentException(
          "sand-callback header: " + field + " is required (an integer), got " + value);
    }
    return value.asLong();
  }
}
