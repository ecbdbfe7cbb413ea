package dev.sand.agent.data;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sand.contracts.Topics;
import dev.sand.store.DataEntry;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * The {@link Topics#DATA_HEADER} of a FINISHED flag: the global data its instance wrote, a JSON
 * list of {@code {"key", "size", "sha256"}} (a put, hash in hex) or {@code {"key", "deleted":
 * true}} (a delete), written by the grain worker. Stateless and thread-safe.
 */
public final class DataHeader {
  private static final ObjectMapper JSON = new ObjectMapper();

  private DataHeader() {}

  /**
   * The entries of {@code json}.
   *
   * @throws IllegalArgumentException naming what is wrong when it is not such a list
   */
  public static List<DataEntry> parse(String json) {
    JsonNode list;
    try {
      list = JSON.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(
          Topics.DATA_HEADER + " header is not JSON: " + e.getOriginalMessage(), e);
    }
    if (list == null || !list.isArray()) {
      throw new IllegalArgumentException(Topics.DATA_HEADER + " header must be a JSON list");
    }
    List<DataEntry> entries = new ArrayList<>();
    for (JsonNode item : list) {
      JsonNode key = item.path("key");
      if (!key.isTextual()) {
        throw new IllegalArgumentException(
            Topics.DATA_HEADER + " header: an entry without a string key: " + item);
      }
      if (item.path("deleted").asBoolean(false)) {
        entries.add(DataEntry.deleted(key.asText()));
        continue;
      }
      JsonNode size = item.path("size");
      JsonNode hash = item.path("sha256");
      if (!size.canConvertToInt() || !hash.isTextual()) {
        throw new IllegalArgumentException(
            Topics.DATA_HEADER
                + " header: entry '"
                + key.asText()
                + "' needs an integer size and a hex sha256");
      }
      try {
        entries.add(
            new DataEntry(key.asText(), size.asInt(), HexFormat.of().parseHex(hash.asText())));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            Topics.DATA_HEADER + " header: entry '" + key.asText() + "': " + e.getMessage(), e);
      }
    }
    return entries;
  }
}
