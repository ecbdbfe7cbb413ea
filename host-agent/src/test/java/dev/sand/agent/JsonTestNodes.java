package dev.sand.agent;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.service.JsonHttp;

/** JSON values for tests of other packages. */
public final class JsonTestNodes {
  private JsonTestNodes() {}

  /** {@code {key: value}}. */
  public static ObjectNode object(String key, int value) {
    return JsonHttp.MAPPER.createObjectNode().put(key, value);
  }
}
