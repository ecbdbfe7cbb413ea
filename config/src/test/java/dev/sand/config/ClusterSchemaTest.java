package dev.sand.config;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.sand.contracts.contractsConstants;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The parser reads exactly the keys {@code cluster.schema.json} declares (decision 0038), and each
 * of them matters. The Python side checks that {@code sand up} writes documents matching the same
 * schema ({@code tests/unit/cluster/test_cluster_schema.py}); together a key written but not read,
 * or read but not written, fails one of the two.
 *
 * <p>No JSON Schema validator is available offline, so {@link JsonSchemaWalker#validate} walks the
 * schema with Jackson; it fails on a keyword it does not know rather than skip it.
 */
class ClusterSchemaTest {
  private static final JsonMapper MAPPER = new JsonMapper();

  /** What {@code sand up} writes, every key present, values chosen so each can change by one. */
  static final String FULL =
      """
      {"state_dir": "/abs/state", "host_id": "host-1",
       "redis": {"socket": "/abs/state/run/redis.sock", "password": "pw"},
       "kafka": {"bootstrap": "127.0.0.1:19092"},
       "cassandra": {"contact_point": "127.0.0.1:19042", "datacenter": "datacenter1",
                     "keyspace": "sand", "execution_retention_days": 30,
                     "replication_factor": 1},
       "docker": {"host": "unix:///abs/state/run/docker.sock", "enabled": true},
       "frontend": {"ports": [18081, 18083], "max_payload_kb": 256,
                    "ui_dir": "/abs/sand/frontend/ui/dist"},
       "host_agent": {"port": 18090, "bind": "127.0.0.1", "secret": "s3cret"},
       "nginx": {"port": 18080},
       "tracing": {"otlp_endpoint": "http://127.0.0.1:4318/v1/traces"},
       "admission": {"max_queued_per_app": 8, "max_queued_per_host": 32, "retry_after_s": 2,
                     "adaptive": true},
       "home": "/abs/sand",
       "sandbox": {"backend": "docker", "base_image": "sand-base:1", "python": "/usr/bin/python3",
                   "source_dirs": ["/abs/sand/sdk-python/src"], "site_dir": "/abs/sand/build/site",
                   "cpus": 1.5, "pids_limit": 512, "tmp_size_mb": 64, "cpu_weight": 100,
                   "max_cpu_weight": 200, "memory_mb": 512, "max_memory_mb": 4096,
                   "max_sandbox_memory_mb": 8192},
       "hosts": [{"id": "host-1", "redis_socket": "/abs/state/run/redis.sock",
                  "agent_url": "http://127.0.0.1:18090"}]}
      """;

  // A key the parser reads only when another is absent: changed with that one removed.
  private static final Map<String, String> SHADOWED_BY = Map.of("home", "frontend.ui_dir");

  private final JsonSchemaWalker walker = JsonSchemaWalker.clusterSchema();
  private final JsonNode schema = walker.schema();

  @Test
  void schema_isDraft202012_everyObjectClosed() {
    assertThat(schema.path("$schema").asText())
        .isEqualTo("https://json-schema.org/draft/2020-12/schema");
    List<String> open = new ArrayList<>();
    walker.walk(
        "",
        schema,
        (path, node) -> {
          if ("object".equals(node.path("type").asText())
              && !node.path("additionalProperties").isBoolean()) {
            open.add(path);
          }
          if (node.has("properties")) {
            Set<String> required = new HashSet<>();
            node.path("required").forEach(r -> required.add(r.asText()));
            // required as `sand up` always writes it: every key
            assertThat(required)
                .as("required of '%s'", path)
                .isEqualTo(JsonSchemaWalker.names(node));
          }
        });
    assertThat(open).as("objects without additionalProperties: false").isEmpty();
  }

  /** The document above is one `sand up` could write, so the other checks speak for it. */
  @Test
  void fullDocument_matchesTheSchema_andTheWalkerSeesDrift() throws IOException {
    assertThat(walker.validate(schema, MAPPER.readTree(FULL), "")).isEmpty();

    ObjectNode drifted = (ObjectNode) MAPPER.readTree(FULL);
    ((ObjectNode) drifted.get("docker")).put("base_image", "sand-base:1");
    ((ObjectNode) drifted.get("frontend")).put("max_payload_kb", 256.0);
    assertThat(walker.validate(schema, drifted, ""))
        .containsExactlyInAnyOrder(
            "docker: key 'base_image' is not declared", "frontend.max_payload_kb: not a integer");
  }

  /**
   * Both directions: a key the schema declares (so `sand up` writes it) that the parser never looks
   * up, and a key the parser looks up that the schema does not declare.
   */
  @Test
  void parser_looksUpExactlyTheSchemasKeys() {
    Set<String> read;
    try {
      read = ClusterConfig.keysRead(FULL);
    } catch (ConfigException e) {
      throw new AssertionError("a document with exactly the schema's keys does not parse", e);
    }
    Set<String> declared = walker.paths().keySet();
    List<String> drift = new ArrayList<>();
    declared.stream()
        .filter(key -> !read.contains(key))
        .forEach(key -> drift.add("declared (sand up writes it), not read: " + key));
    read.stream()
        .filter(key -> !declared.contains(key))
        .forEach(key -> drift.add("read, not declared in cluster.schema.json: " + key));
    assertThat(drift).as("ClusterConfig's keys vs cluster.schema.json").isEmpty();
  }

  /** Each key is not only looked up but used: a different value gives a different config. */
  @Test
  void everySchemaKey_changesTheParsedConfig() throws IOException {
    List<String> ignored = new ArrayList<>();
    for (Map.Entry<String, JsonNode> entry : walker.paths().entrySet()) {
      String path = entry.getKey();
      JsonNode declared = entry.getValue();
      if ("object".equals(declared.path("type").asText())
          || "object".equals(declared.path("items").path("type").asText())) {
        continue; // its keys are changed one by one
      }
      ObjectNode base = (ObjectNode) MAPPER.readTree(FULL);
      ObjectNode changed = base.deepCopy();
      change(changed, path, declared);
      assertThat(walker.validate(schema, changed, "")).as("%s changed", path).isEmpty();
      if (SHADOWED_BY.containsKey(path)) {
        String[] shadow = SHADOWED_BY.get(path).split("\\.");
        ((ObjectNode) base.get(shadow[0])).remove(shadow[1]);
        ((ObjectNode) changed.get(shadow[0])).remove(shadow[1]);
      }
      if (ClusterConfig.parse(changed.toString()).equals(ClusterConfig.parse(base.toString()))) {
        ignored.add(path);
      }
    }
    assertThat(ignored).as("keys whose value does not change the parsed config").isEmpty();
  }

  /**
   * A bound both languages check is a {@code CONFIG_*} constant of contracts.thrift; the schema
   * names it beside the value, which must be the constant's.
   */
  @Test
  void bounds_areTheContractsConstants() throws ReflectiveOperationException {
    Map<String, Integer> named = new LinkedHashMap<>();
    List<String> wrong = new ArrayList<>();
    for (String bound : List.of("minimum", "maximum")) {
      for (JsonNode node : JsonSchemaWalker.allNodes(schema)) {
        if (node.has("x-" + bound + "-from")) {
          String constant = node.get("x-" + bound + "-from").asText();
          int value = contractsConstants.class.getField(constant).getInt(null);
          named.put(constant, value);
          if (!node.has(bound) || node.get(bound).intValue() != value) {
            wrong.add(bound + " " + node.get(bound) + " is not " + constant + " = " + value);
          }
        }
      }
    }
    assertThat(wrong).isEmpty();
    assertThat(named)
        .containsOnlyKeys(
            "CONFIG_MAX_QUEUED",
            "CONFIG_MAX_RETRY_AFTER_S",
            "CONFIG_MAX_RETENTION_DAYS",
            "CONFIG_MIN_CPU_WEIGHT",
            "CONFIG_MAX_CPU_WEIGHT",
            "CONFIG_MAX_PAYLOAD_KB",
            "CONFIG_MAX_HOSTS");
  }

  // -- one key changed to another valid value

  // {@code path}'s value in {@code document} (the first item of a list) set to a neighbour.
  private static void change(ObjectNode document, String path, JsonNode declared) {
    String[] keys = path.split("\\.");
    JsonNode parent = document;
    for (int i = 0; i < keys.length - 1; i++) {
      parent = step(parent, keys[i]);
    }
    String last = keys[keys.length - 1];
    JsonNode value = parent.get(last);
    if (value.isArray()) {
      ((ArrayNode) value).set(0, neighbour(value.get(0), declared.path("items")));
    } else {
      ((ObjectNode) parent).set(last, neighbour(value, declared));
    }
  }

  private static JsonNode step(JsonNode node, String key) {
    return key.endsWith("[]") ? node.get(key.substring(0, key.length() - 2)).get(0) : node.get(key);
  }

  private static JsonNode neighbour(JsonNode value, JsonNode declared) {
    if (declared.has("enum")) {
      for (JsonNode other : declared.get("enum")) {
        if (!other.equals(value)) {
          return other;
        }
      }
    }
    if (value.isBoolean()) {
      return BooleanNode.valueOf(!value.booleanValue());
    }
    if (value.isInt()) {
      boolean roomAbove =
          !declared.has("maximum") || value.intValue() < declared.get("maximum").intValue();
      return IntNode.valueOf(value.intValue() + (roomAbove ? 1 : -1));
    }
    if (value.isDouble()) {
      return DoubleNode.valueOf(value.doubleValue() + 0.5);
    }
    // a digit bumped keeps addresses, ports and URLs valid; a path or name gets one more letter
    String text = value.textValue();
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (Character.isDigit(c)) {
        return TextNode.valueOf(
            text.substring(0, i) + (char) ('0' + (c - '0' + 1) % 10) + text.substring(i + 1));
      }
    }
    return TextNode.valueOf(text + "x");
  }
}
