package dev.sand.sandbox.process;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sand.sandbox.SandboxSpec;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ProcessSandboxRuntimeTest {
  /** The jail gets the app's user, its limits and every mount of the spec. */
  @Test
  void jailSpec_carriesUserLimitsAndMounts() throws Exception {
    SandboxSpec spec =
        new SandboxSpec(
            "thumbs",
            "img",
            300,
            1,
            40,
            Path.of("/logs/thumbs.log"),
            new SandboxSpec.User(2_000_000_007, 2_000_000_007),
            16,
            List.of(new SandboxSpec.Mount("/st/apps/thumbs", "/st/apps/thumbs", true)),
            Map.of(),
            List.of("python3", "-m", "sand_worker"));

    JsonNode doc = new ObjectMapper().readTree(ProcessSandboxRuntime.jailSpec(spec));

    assertThat(doc.get("uid").asInt()).isEqualTo(2_000_000_007);
    assertThat(doc.get("gid").asInt()).isEqualTo(2_000_000_007);
    assertThat(doc.get("tmp_size_mb").asInt()).isEqualTo(16);
    assertThat(doc.get("memory_mb").asInt()).isEqualTo(300);
    assertThat(doc.get("pids_limit").asInt()).isEqualTo(40);
    assertThat(doc.get("mounts").get(0).get("host").asText()).isEqualTo("/st/apps/thumbs");
    assertThat(doc.get("mounts").get(0).get("read_only").asBoolean()).isTrue();
  }
}
