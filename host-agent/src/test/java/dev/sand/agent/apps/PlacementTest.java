package dev.sand.agent.apps;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PlacementTest {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final List<String> CLUSTER = List.of("host-1", "host-2", "host-3");

  private static JsonNode json(String text) throws Exception {
    return MAPPER.readTree(text);
  }

  /** A resolved placement answers which grains run on each host, and which do not. */
  @Test
  void of_resolvedPlacement_grainsOnEachHost() throws Exception {
    Placement placement =
        Placement.of(
            json(
                """
                {"grains": ["first", "middle", "last"],
                 "placement": {"hosts": ["host-1", "host-2"],
                   "grains": {"first": ["host-1", "host-2"], "middle": ["host-2"],
                              "last": ["host-1", "host-2"]}}}
                """),
            CLUSTER);

    assertThat(placement.grainsOn("host-1")).containsExactly("first", "last");
    assertThat(placement.grainsElsewhere("host-1")).containsExactly("middle");
    assertThat(placement.grainsOn("host-2")).containsExactly("first", "middle", "last");
    assertThat(placement.runsOn("host-3")).isFalse();
    assertThat(placement.grainsElsewhere("host-3")).containsExactly("first", "last", "middle");
  }

  /** A description without placement (an older validator) places every grain everywhere. */
  @Test
  void of_noPlacement_everyGrainOnEveryHost() throws Exception {
    Placement placement = Placement.of(json("{\"grains\": [\"a\", \"b\"]}"), CLUSTER);

    assertThat(placement.hosts()).isEqualTo(CLUSTER);
    assertThat(placement.grainsOn("host-3")).containsExactly("a", "b");
    assertThat(placement.grainsElsewhere("host-2")).isEmpty();
  }

  /** A placement that leaves a grain without hosts is a validator bug, not a silent default. */
  @Test
  void of_grainMissingFromPlacement_isAnInternalError() throws Exception {
    JsonNode description =
        json(
            """
            {"grains": ["a", "b"], "placement": {"hosts": ["host-1"], "grains": {"a": ["host-1"]}}}
            """);

    assertThatThrownBy(() -> Placement.of(description, CLUSTER))
        .isInstanceOf(DeployException.class)
        .hasMessageContaining("grain 'b'");
  }

  /** The deploy parameter is recorded with the options, so every host applies the same. */
  @Test
  void deployOptions_placementSurvivesTheRecord() {
    DeployOptions options =
        new DeployOptions(
            Optional.empty(), true, Set.of(), Optional.of("{\"hosts\":[\"host-2\"]}"));

    DeployOptions back = DeployOptions.fromJson(MAPPER, options.toJson(MAPPER));

    assertThat(back.placement()).contains("{\"hosts\":[\"host-2\"]}");
    assertThat(DeployOptions.fromJson(MAPPER, "{}").placement()).isEmpty();
  }
}
