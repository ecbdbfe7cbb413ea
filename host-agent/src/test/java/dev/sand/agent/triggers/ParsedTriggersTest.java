package dev.sand.agent.triggers;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class ParsedTriggersTest {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** The deploy time and the app's payload limit come from its metadata. */
  @Test
  void of_readsDeployTimeAndPayloadLimit() throws Exception {
    JsonNode app =
        MAPPER.readTree(
            """
            {"name": "thumbs", "deployed_at": "2026-01-02T03:04:05Z", "limits": {"payload_kb": 4}}
            """);

    ParsedTriggers parsed = ParsedTriggers.of(app);

    assertThat(parsed.metadata()).isSameAs(app);
    assertThat(parsed.defs()).isEmpty();
    assertThat(parsed.deployedAtMs())
        .isEqualTo(Instant.parse("2026-01-02T03:04:05Z").toEpochMilli());
    assertThat(parsed.payloadLimitBytes()).isEqualTo(4 * 1024);
  }

  /** Without a readable deploy time it is 0; without a payload limit it is 256 KiB. */
  @Test
  void of_missingOrUnreadable_defaults() throws Exception {
    JsonNode app = MAPPER.readTree("{\"name\": \"thumbs\", \"deployed_at\": \"yesterday\"}");

    ParsedTriggers parsed = ParsedTriggers.of(app);

    assertThat(parsed.deployedAtMs()).isZero();
    assertThat(parsed.payloadLimitBytes()).isEqualTo(256 * 1024);
  }
}
