package dev.sand.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.service.JsonHttp;
import dev.sand.store.ExecutionQuery;
import dev.sand.store.HistoryEntry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * The one codec of the opaque {@code page} tokens of {@code GET /v1/executions} and {@code
 * .../history}: a cursor as JSON with full field names (and the listing it belongs to), base64url
 * without padding. Clients must treat a token as opaque; the server checks it on the way back in.
 */
final class PageTokens {
  private static final String KIND = "kind";
  private static final String EXECUTIONS = "executions";
  private static final String HISTORY = "history";

  private PageTokens() {}

  /** The token of a listing cursor. */
  static String encode(ExecutionQuery.Cursor cursor) {
    ObjectNode json = JsonHttp.MAPPER.createObjectNode();
    json.put(KIND, EXECUTIONS);
    json.put("started_ms", cursor.startedMs());
    json.put("execution_id", cursor.executionId());
    return wrap(json);
  }

  /** The token of a history cursor. */
  static String encode(HistoryEntry.Cursor cursor) {
    ObjectNode json = JsonHttp.MAPPER.createObjectNode();
    json.put(KIND, HISTORY);
    json.put("at_ms", cursor.atMs());
    json.put("batch", cursor.batch());
    json.put("index", cursor.index());
    return wrap(json);
  }

  /**
   * The listing cursor {@code token} holds.
   *
   * @throws IllegalArgumentException naming {@code page} when it is not a listing's token
   */
  static ExecutionQuery.Cursor listing(String token) {
    JsonNode json = unwrap(token, EXECUTIONS);
    JsonNode started = json.get("started_ms");
    JsonNode id = json.get("execution_id");
    if (started == null || !started.canConvertToLong() || id == null || !id.isTextual()) {
      throw invalid(token);
    }
    try {
      return new ExecutionQuery.Cursor(started.asLong(), id.asText());
    } catch (IllegalArgumentException e) {
      throw invalid(token);
    }
  }

  /**
   * The history cursor {@code token} holds.
   *
   * @throws IllegalArgumentException naming {@code page} when it is not a history token
   */
  static HistoryEntry.Cursor history(String token) {
    JsonNode json = unwrap(token, HISTORY);
    JsonNode at = json.get("at_ms");
    JsonNode batch = json.get("batch");
    JsonNode index = json.get("index");
    if (at == null
        || !at.canConvertToLong()
        || batch == null
        || !batch.isTextual()
        || index == null
        || !index.canConvertToInt()) {
      throw invalid(token);
    }
    try {
      return new HistoryEntry.Cursor(at.asLong(), batch.asText(), index.asInt());
    } catch (IllegalArgumentException e) {
      throw invalid(token);
    }
  }

  private static String wrap(ObjectNode json) {
    return Base64.getUrlEncoder()
        .withoutPadding()
        .encodeToString(json.toString().getBytes(StandardCharsets.UTF_8));
  }

  private static JsonNode unwrap(String token, String kind) {
    JsonNode json;
    try {
      json = JsonHttp.MAPPER.readTree(Base64.getUrlDecoder().decode(token));
    } catch (IllegalArgumentException | IOException e) {
      throw invalid(token);
    }
    if (json == null || !json.isObject() || !kind.equals(json.path(KIND).asText())) {
      throw invalid(token);
    }
    return json;
  }

  private static IllegalArgumentException invalid(String token) {
    String shown = token.length() > 64 ? token.substring(0, 64) + "..." : token;
    return new IllegalArgumentException(
        "page must be a next_page token from the previous answer of this listing, got '"
            + shown
            + "'");
  }
}
