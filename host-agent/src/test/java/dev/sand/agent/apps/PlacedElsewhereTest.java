package dev.sand.agent.apps;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PlacedElsewhereTest {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final Clock CLOCK =
      Clock.fixed(Instant.parse("2026-01-02T03:04:05Z"), ZoneOffset.UTC);

  private static ObjectNode description() throws Exception {
    return (ObjectNode)
        MAPPER.readTree(
            """
            {"name": "thumbs", "grains": ["resize"],
             "placement": {"hosts": ["host-2"], "grains": {"resize": ["host-2"]}}}
            """);
  }

  private static ObjectNode put(PlacedElsewhere elsewhere, int version) throws Exception {
    ObjectNode description = description();
    Placement placement = Placement.of(description, List.of("host-1", "host-2"));
    DeployOptions options = DeployOptions.defaults().withOwner(Optional.of("ada"));
    return elsewhere.put("thumbs", version, description, options, placement);
  }

  /** The kept metadata names this host, no local grains, the owner and the deploy time. */
  @Test
  void put_keepsMetadataWithoutLocalGrains() throws Exception {
    PlacedElsewhere elsewhere = new PlacedElsewhere("host-1", CLOCK, MAPPER);

    ObjectNode metadata = put(elsewhere, 3);

    assertThat(metadata.path("version").asInt()).isEqualTo(3);
    assertThat(metadata.path("local_grains")).isEmpty();
    assertThat(metadata.path("owner").asText()).isEqualTo("ada");
    assertThat(metadata.path("host").asText()).isEqualTo("host-1");
    assertThat(metadata.path("deployed_at").asText()).isEqualTo("2026-01-02T03:04:05Z");
    assertThat(elsewhere.version("thumbs")).isEqualTo(3);
    assertThat(elsewhere.version("other")).isZero();
  }

  /** List and describe show a kept app without sandbox, in the state "not placed on this host". */
  @Test
  void describe_showsNotPlacedHere() throws Exception {
    PlacedElsewhere elsewhere = new PlacedElsewhere("host-1", CLOCK, MAPPER);
    put(elsewhere, 1);

    ObjectNode shown = elsewhere.describe("thumbs").orElseThrow();

    assertThat(shown.path("sandbox").isNull()).isTrue();
    assertThat(shown.path("state").asText()).isEqualTo("not placed on this host");
    assertThat(elsewhere.list()).containsExactly(shown);
  }

  /** Apps no longer on record are forgotten; remove says whether it knew the app. */
  @Test
  void retainAllAndRemove_forget() throws Exception {
    PlacedElsewhere elsewhere = new PlacedElsewhere("host-1", CLOCK, MAPPER);
    put(elsewhere, 1);

    elsewhere.retainAll(Set.of("other"));

    assertThat(elsewhere.describe("thumbs")).isEmpty();
    assertThat(elsewhere.remove("thumbs")).isFalse();
    put(elsewhere, 2);
    assertThat(elsewhere.remove("thumbs")).isTrue();
  }
}
