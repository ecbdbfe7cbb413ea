package dev.sand.contracts;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The Java side builds every shared name exactly as {@code contract-cases.json} says. The Python
 * side ({@code tests/unit/sdk/test_contracts.py}) checks the same file, so both languages build the
 * same names from the same inputs.
 */
class ContractCasesTest {
  private static final JsonNode CASES = load();

  private static final Map<String, Function<JsonNode, String>> BUILDERS =
      Map.ofEntries(
          Map.entry("queue", a -> Keys.grain(a.path("app").asText(), a.path("grain").asText())),
          Map.entry("agent", a -> Keys.agent(a.path("host").asText())),
          Map.entry("reply", a -> Keys.reply(a.path("frontend").asText())),
          Map.entry("result", a -> Keys.result(a.path("execution").asText())),
          Map.entry("incarnation", a -> Keys.incarnation()),
          Map.entry("timers", a -> Keys.timers()),
          Map.entry("app", a -> Keys.app(a.path("app").asText())),
          Map.entry("ready", a -> Keys.ready(a.path("app").asText(), a.path("grain").asText())),
          Map.entry("broken", a -> Keys.broken(a.path("app").asText(), a.path("grain").asText())),
          Map.entry("metrics", a -> Keys.metrics(a.path("app").asText(), a.path("grain").asText())),
          Map.entry("data_requests", a -> Keys.dataRequests(a.path("app").asText())),
          Map.entry(
              "data_reply",
              a -> Keys.dataReply(a.path("app").asText(), a.path("request").asText())),
          Map.entry("redis_user", a -> Keys.redisUser(a.path("app").asText())),
          Map.entry(
              "grain_topic", a -> Topics.grain(a.path("app").asText(), a.path("grain").asText())),
          Map.entry("results_topic", a -> Topics.RESULTS),
          Map.entry("sandbox_cgroup", a -> Names.sandboxCgroup(a.path("state_dir").asText())));

  private static final Map<String, Function<String, String>> RULES =
      Map.of(
          "app", Names::requireApp,
          "grain", Names::requireGrain,
          "workflow", Names::requireWorkflow,
          "host", Names::requireHostId,
          "execution", Names::requireExecutionId,
          "data_request", Names::requireDataRequest);

  private static JsonNode load() {
    try (InputStream in = ContractCasesTest.class.getResourceAsStream("/contract-cases.json")) {
      return new ObjectMapper().readTree(in);
    } catch (IOException e) {
      throw new IllegalStateException("contract-cases.json is unreadable", e);
    }
  }

  static Stream<JsonNode> keyCases() {
    return list(CASES.path("keys")).stream();
  }

  static Stream<JsonNode> nameCases() {
    return list(CASES.path("names")).stream();
  }

  static Stream<JsonNode> metricErrorCases() {
    return list(CASES.path("metric_error_labels")).stream();
  }

  static Stream<JsonNode> resultCases() {
    return list(CASES.path("result_documents")).stream();
  }

  private static List<JsonNode> list(JsonNode array) {
    List<JsonNode> out = new ArrayList<>();
    array.forEach(out::add);
    return out;
  }

  /** The fixture and the builders cover each other: no shared name goes untested. */
  @Test
  void everyCaseKind_hasABuilder() {
    Set<String> kinds = new HashSet<>();
    keyCases().forEach(c -> kinds.add(c.path("kind").asText()));
    assertThat(kinds).isEqualTo(BUILDERS.keySet());
  }

  /** Each key and topic is built from the IDL's template as the fixture states. */
  @ParameterizedTest
  @MethodSource("keyCases")
  void keyAndTopicNames_matchTheContract(JsonNode c) {
    assertThat(BUILDERS.get(c.path("kind").asText()).apply(c.path("args")))
        .isEqualTo(c.path("expect").asText());
  }

  /** An app's ACL user gets exactly the fixture's owned and write-only patterns. */
  @Test
  void aclPatterns_matchTheContract() {
    JsonNode acl = CASES.path("acl");
    assertThat(Keys.appOwnedPatterns(acl.path("app").asText()))
        .containsExactlyElementsOf(list(acl.path("owned")).stream().map(JsonNode::asText).toList());
    assertThat(Keys.appWriteOnlyPatterns())
        .containsExactlyElementsOf(
            list(acl.path("write_only")).stream().map(JsonNode::asText).toList());
    assertThat(Keys.appReadOnlyPatterns(acl.path("app").asText()))
        .containsExactlyElementsOf(
            list(acl.path("read_only")).stream().map(JsonNode::asText).toList());
  }

  /** Valid and invalid names are judged the same as in Python (full match). */
  @ParameterizedTest
  @MethodSource("nameCases")
  void nameRules_matchTheContract(JsonNode c) {
    String value = c.path("value").asText();
    boolean valid;
    try {
      RULES.get(c.path("rule").asText()).apply(value);
      valid = true;
    } catch (IllegalArgumentException e) {
      assertThat(e).hasMessageContaining("'" + value + "'");
      valid = false;
    }
    assertThat(valid)
        .as("%s '%s'", c.path("rule").asText(), value)
        .isEqualTo(c.path("valid").asBoolean());
  }

  /** A failure's error type becomes the same metric label as in Python. */
  @ParameterizedTest
  @MethodSource("metricErrorCases")
  void metricErrorLabels_matchTheContract(JsonNode c) {
    String error = c.path("error").isNull() ? null : c.path("error").asText();
    assertThat(MetricLabels.error(error)).as("%s", error).isEqualTo(c.path("label").asText());
  }

  /** The result document has the IDL's field names and the status by name, in both directions. */
  @ParameterizedTest
  @MethodSource("resultCases")
  void resultDocument_matchesTheContract(JsonNode c) {
    ResultDocument parsed = ResultDocument.parse(c.path("expect").toString().getBytes());
    assertThat(parsed.status().name()).isEqualTo(c.path("status").asText());
    assertThat(parsed.toJson()).isEqualTo(c.path("expect"));
  }

  /** A grain topic matches the global bus's pattern; the results topic does not. */
  @Test
  void grainTopics_matchDeliveryTopicsOnly() {
    assertThat(Topics.GRAIN_TOPICS.matcher(Topics.grain("thumbs", "resize")).matches()).isTrue();
    assertThat(Topics.GRAIN_TOPICS.matcher(Topics.RESULTS).matches()).isFalse();
  }
}
