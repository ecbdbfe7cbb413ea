package dev.sand.config;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * {@code cluster.schema.json} walked with Jackson, as no JSON Schema validator is available
 * offline: every property's schema by dotted path, and what is wrong with a value under a schema.
 * {@link #validate} fails on a keyword it does not know rather than skip it.
 */
final class JsonSchemaWalker {
  // The keywords validate() understands; annotations (description, x-...-from) are skipped.
  private static final Set<String> KEYWORDS =
      Set.of(
          "type",
          "properties",
          "required",
          "additionalProperties",
          "items",
          "minItems",
          "uniqueItems",
          "minimum",
          "maximum",
          "exclusiveMinimum",
          "minLength",
          "pattern",
          "enum",
          "$ref");
  private static final Set<String> ANNOTATIONS =
      Set.of("$schema", "$defs", "title", "description", "x-minimum-from", "x-maximum-from");

  private final JsonNode schema;

  private JsonSchemaWalker(JsonNode schema) {
    this.schema = schema;
  }

  /** The copy of {@code cluster.schema.json} the config module ships. */
  static JsonSchemaWalker clusterSchema() {
    // read as the services' classpath has it
    try (InputStream in = ClusterConfig.class.getResourceAsStream("cluster.schema.json")) {
      assertThat(in).as("dev/sand/config/cluster.schema.json on the classpath").isNotNull();
      return new JsonSchemaWalker(new JsonMapper().readTree(in));
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  JsonNode schema() {
    return schema;
  }

  interface Visitor {
    void visit(String path, JsonNode node);
  }

  /**
   * Every property's schema by dotted path ({@code redis}, {@code redis.socket}, {@code
   * hosts[].id}).
   */
  Map<String, JsonNode> paths() {
    Map<String, JsonNode> paths = new LinkedHashMap<>();
    walk("", schema, (path, node) -> paths.put(path, node));
    paths.remove("");
    return paths;
  }

  void walk(String path, JsonNode node, Visitor visitor) {
    node = resolve(node);
    visitor.visit(path, node);
    String prefix = path.isEmpty() ? "" : path + ".";
    for (Map.Entry<String, JsonNode> property : node.path("properties").properties()) {
      walk(prefix + property.getKey(), property.getValue(), visitor);
    }
    JsonNode items = resolve(node.path("items"));
    if (items.has("properties")) {
      for (Map.Entry<String, JsonNode> property : items.get("properties").properties()) {
        walk(path + "[]." + property.getKey(), property.getValue(), visitor);
      }
    }
  }

  // A local $ref ("#/$defs/port") with its siblings (a description) laid over the target.
  private JsonNode resolve(JsonNode node) {
    if (!node.has("$ref")) {
      return node;
    }
    String ref = node.get("$ref").asText();
    assertThat(ref).startsWith("#/");
    ObjectNode merged = schema.at(ref.substring(1)).deepCopy();
    assertThat(merged.isEmpty()).as("$ref %s resolves", ref).isFalse();
    for (Map.Entry<String, JsonNode> field : node.properties()) {
      if (!"$ref".equals(field.getKey())) {
        merged.set(field.getKey(), field.getValue());
      }
    }
    return merged;
  }

  static Set<String> names(JsonNode node) {
    Set<String> names = new HashSet<>();
    node.path("properties").fieldNames().forEachRemaining(names::add);
    return names;
  }

  static List<JsonNode> allNodes(JsonNode node) {
    List<JsonNode> nodes = new ArrayList<>();
    if (node.isContainerNode()) {
      nodes.add(node);
      node.forEach(child -> nodes.addAll(allNodes(child)));
    }
    return nodes;
  }

  /** What is wrong with {@code value} under {@code declared}; empty when it matches. */
  List<String> validate(JsonNode declared, JsonNode value, String at) {
    JsonNode node = resolve(declared);
    List<String> problems = new ArrayList<>();
    String where = at.isEmpty() ? "(top)" : at;
    node.fieldNames()
        .forEachRemaining(
            keyword ->
                assertThat(KEYWORDS.contains(keyword) || ANNOTATIONS.contains(keyword))
                    .as("keyword '%s' is unknown to JsonSchemaWalker.validate: teach it", keyword)
                    .isTrue());
    String type = node.path("type").asText("");
    boolean typed =
        switch (type) {
          case "" -> true;
          case "object" -> value.isObject();
          case "array" -> value.isArray();
          case "string" -> value.isTextual();
          // as the parser reads them: 1.0 is not an integer, and it must fit an int
          case "integer" -> value.isIntegralNumber() && value.canConvertToInt();
          case "number" -> value.isNumber();
          case "boolean" -> value.isBoolean();
          default -> throw new AssertionError("unknown type " + type);
        };
    if (!typed) {
      problems.add(where + ": not a " + type);
      return problems;
    }
    if (node.has("enum")) {
      boolean listed = false;
      for (JsonNode allowed : node.get("enum")) {
        listed |= allowed.equals(value);
      }
      if (!listed) {
        problems.add(where + ": " + value + " is not one of " + node.get("enum"));
      }
    }
    if (node.has("minimum") && value.doubleValue() < node.get("minimum").doubleValue()) {
      problems.add(where + ": below " + node.get("minimum"));
    }
    if (node.has("maximum") && value.doubleValue() > node.get("maximum").doubleValue()) {
      problems.add(where + ": above " + node.get("maximum"));
    }
    if (node.has("exclusiveMinimum")
        && value.doubleValue() <= node.get("exclusiveMinimum").doubleValue()) {
      problems.add(where + ": not above " + node.get("exclusiveMinimum"));
    }
    if (node.has("minLength") && value.textValue().length() < node.get("minLength").intValue()) {
      problems.add(where + ": shorter than " + node.get("minLength"));
    }
    if (node.has("pattern")
        && !Pattern.compile(node.get("pattern").asText()).matcher(value.textValue()).find()) {
      problems.add(where + ": does not match " + node.get("pattern"));
    }
    if (value.isObject()) {
      node.path("required")
          .forEach(
              key -> {
                if (!value.has(key.asText())) {
                  problems.add(where + ": key '" + key.asText() + "' is missing");
                }
              });
      String prefix = at.isEmpty() ? "" : at + ".";
      for (Map.Entry<String, JsonNode> field : value.properties()) {
        JsonNode property = node.path("properties").get(field.getKey());
        if (property == null) {
          // cluster.schema.json closes every object (schema_isDraft202012_everyObjectClosed)
          problems.add(where + ": key '" + field.getKey() + "' is not declared");
        } else {
          problems.addAll(validate(property, field.getValue(), prefix + field.getKey()));
        }
      }
    }
    if (value.isArray()) {
      if (node.has("minItems") && value.size() < node.get("minItems").intValue()) {
        problems.add(where + ": fewer than " + node.get("minItems") + " items");
      }
      Set<JsonNode> seen = new HashSet<>();
      for (int i = 0; i < value.size(); i++) {
        if (node.path("uniqueItems").asBoolean() && !seen.add(value.get(i))) {
          problems.add(where + ": " + value.get(i) + " twice");
        }
        problems.addAll(validate(node.get("items"), value.get(i), at + "[" + i + "]"));
      }
    }
    return problems;
  }
}
