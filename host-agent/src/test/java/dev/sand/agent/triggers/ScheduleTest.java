package dev.sand.agent.triggers;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The schedules of the known-answer vectors ({@code tests/vectors/schedules.json}), which the
 * Python validator is held to as well: both sides fire at the same instants and refuse the same
 * expressions.
 */
class ScheduleTest {
  private static final Path VECTORS = Path.of("..", "tests", "vectors", "schedules.json");

  private static JsonNode vectors() throws IOException {
    return new ObjectMapper().readTree(VECTORS.toFile());
  }

  @Test
  void validVectors_nextThreeFirings_matchTheVectors() throws IOException {
    JsonNode all = vectors().path("valid");
    assertThat(all.size()).isGreaterThanOrEqualTo(12);
    for (JsonNode v : all) {
      Schedule schedule = Schedule.parse(v.path("schedule").asText(), v.path("timezone").asText());
      List<String> got = new ArrayList<>();
      Instant at = Instant.parse(v.path("after").asText());
      for (int i = 0; i < v.path("next").size(); i++) {
        at = schedule.nextAfter(at).orElseThrow();
        got.add(at.toString());
      }
      List<String> expected = new ArrayList<>();
      v.path("next").forEach(n -> expected.add(n.asText()));
      assertThat(got).as(v.toString()).isEqualTo(expected);
      // the latest firing at one of them is itself; a second before it, the one before
      Instant first = Instant.parse(expected.get(0));
      Instant second = Instant.parse(expected.get(1));
      assertThat(schedule.latestAtOrBefore(second)).as(v.toString()).contains(second);
      assertThat(schedule.latestAtOrBefore(second.minusSeconds(1)))
          .as(v.toString())
          .contains(first);
    }
  }

  @Test
  void invalidVectors_refusedNamingTheField() throws IOException {
    JsonNode all = vectors().path("invalid");
    assertThat(all.size()).isGreaterThanOrEqualTo(8);
    List<String> accepted = new ArrayList<>();
    for (JsonNode v : all) {
      try {
        Schedule.parse(v.path("schedule").asText(), v.path("timezone").asText("UTC"));
        accepted.add(v.toString());
      } catch (IllegalArgumentException e) {
        assertThat(e.getMessage()).as(v.toString()).matches("(?s)(schedule|timezone): .*");
      }
    }
    assertThat(accepted).as("invalid schedules accepted").isEmpty();
  }
}
