package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

class AppMetadataTest {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private static AppMetadata parse(String json) throws Exception {
    return AppMetadata.parse("placed", MAPPER.readTree(json));
  }

  /** A host's metadata says which grains it runs: only those can take an entry event there. */
  @Test
  void runs_localGrains_onlyThose() throws Exception {
    AppMetadata app =
        parse(
            """
            {"workflows": {"main": {"entry_grain": "first"}},
             "local_grains": ["middle"]}
            """);

    assertThat(app.runs("middle")).isTrue();
    assertThat(app.runs("first")).isFalse();
  }

  /** Metadata without local_grains (an agent from before placement) runs every grain. */
  @Test
  void runs_noLocalGrains_everyGrain() throws Exception {
    AppMetadata app = parse("{\"workflows\": {\"main\": {\"entry_grain\": \"first\"}}}");

    assertThat(app.runs("first")).isTrue();
  }
}
