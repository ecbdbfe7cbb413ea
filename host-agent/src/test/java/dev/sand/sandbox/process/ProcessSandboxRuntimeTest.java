package dev.sand.sandbox.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sand.sandbox.SandboxException;
import dev.sand.sandbox.SandboxExits;
import dev.sand.sandbox.SandboxId;
import dev.sand.sandbox.SandboxInfo;
import dev.sand.sandbox.SandboxSpec;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ProcessSandboxRuntimeTest {
  static SandboxSpec spec() {
    return new SandboxSpec(
        "thumbs",
        "img",
        300,
        1,
        100,
        40,
        Path.of("/logs/thumbs.log"),
        new SandboxSpec.User(2_000_000_007, 2_000_000_007),
        16,
        List.of(new SandboxSpec.Mount("/st/apps/thumbs", "/st/apps/thumbs", true)),
        Map.of(),
        List.of("python3", "-m", "sand_worker"));
  }

  /** An agent that is not root starts no process sandbox, and says how to fix it. */
  @Test
  void start_agentNotRoot_refusesNamingTheFix() {
    try (ProcessSandboxRuntime runtime =
        new ProcessSandboxRuntime(
            Path.of("/usr/bin/python3"),
            Optional.of(Path.of("/src/sand_worker/jail.py")),
            false,
            Optional.empty(),
            "",
            new SandboxExits())) {
      SandboxId id = runtime.create(spec());

      assertThatThrownBy(() -> runtime.start(id))
          .isInstanceOf(SandboxException.class)
          .hasMessageContaining("app 'thumbs'")
          .hasMessageContaining("run the agent as root, or deploy with --backend docker");
      assertThat(runtime.listOwned())
          .singleElement()
          .extracting(SandboxInfo::state)
          .isEqualTo("created");
    }
  }

  /** A root agent on a machine without cpu and memory cgroups starts no sandbox, naming why. */
  @Test
  void start_noCgroups_refusesNamingWhyAndTheFix() {
    try (ProcessSandboxRuntime runtime =
        new ProcessSandboxRuntime(
            Path.of("/usr/bin/python3"),
            Optional.of(Path.of("/src/sand_worker/jail.py")),
            true,
            Optional.empty(),
            "no cgroup v2 mount offering cpu and memory",
            new SandboxExits())) {
      SandboxId id = runtime.create(spec());

      assertThatThrownBy(() -> runtime.start(id))
          .isInstanceOf(SandboxException.class)
          .hasMessageContaining("app 'thumbs'")
          .hasMessageContaining("without CPU and memory limits")
          .hasMessageContaining("no cgroup v2 mount offering cpu and memory")
          .hasMessageContaining("or deploy with --backend docker");
      assertThat(runtime.reclaim()).isZero();
    }
  }
}
