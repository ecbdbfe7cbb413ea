package dev.sand.sandbox.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sand.sandbox.SandboxException;
import dev.sand.sandbox.SandboxSpec;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class JailCommandTest {
  private static final Cgroups.Box BOX =
      new Cgroups.Box(
          List.of(Path.of("/cg/cpu/sand-x/b"), Path.of("/cg/memory/sand-x/b")),
          Path.of("/cg/memory/sand-x/b"),
          Cgroups.Version.V1);

  /** The jail gets the app's user, its limits, every mount of the spec and its cgroups. */
  @Test
  void spec_carriesUserLimitsMountsAndCgroups() throws Exception {
    SandboxSpec spec = ProcessSandboxRuntimeTest.spec();
    Cgroups.Box box =
        new Cgroups.Box(
            List.of(Path.of("/cg/cpu/sand-x/b"), Path.of("/cg/memory/sand-x/b")),
            Path.of("/cg/memory/sand-x/b"),
            Cgroups.Version.V1);

    JsonNode doc = new ObjectMapper().readTree(JailCommand.spec(spec, box));

    assertThat(doc.get("uid").asInt()).isEqualTo(2_000_000_007);
    assertThat(doc.get("gid").asInt()).isEqualTo(2_000_000_007);
    assertThat(doc.get("tmp_size_mb").asInt()).isEqualTo(16);
    assertThat(doc.get("memory_mb").asInt()).isEqualTo(300);
    assertThat(doc.get("pids_limit").asInt()).isEqualTo(40);
    assertThat(doc.get("mounts").get(0).get("host").asText()).isEqualTo("/st/apps/thumbs");
    assertThat(doc.get("mounts").get(0).get("read_only").asBoolean()).isTrue();
    assertThat(doc.get("cgroups").get(0).asText()).isEqualTo("/cg/cpu/sand-x/b");
    assertThat(doc.get("cgroups").get(1).asText()).isEqualTo("/cg/memory/sand-x/b");
    assertThat(doc.get("memory_cgroup").asText()).isEqualTo("/cg/memory/sand-x/b");
    assertThat(doc.get("cgroup_version").asInt()).isEqualTo(1);
  }

  /** The command runs the jail in new namespaces, isolated Python, then the spec's own command. */
  @Test
  void argv_unshareThenJailThenCommand() {
    JailCommand jail =
        new JailCommand(Path.of("/usr/bin/python3"), Optional.of(Path.of("/src/jail.py")));

    List<String> argv = jail.argv(ProcessSandboxRuntimeTest.spec(), BOX);

    assertThat(argv).startsWith("unshare", "--mount", "--net", "--pid", "--ipc", "--uts");
    assertThat(argv).containsSubsequence("--", "/usr/bin/python3", "-I", "-S", "/src/jail.py");
    assertThat(argv).endsWith("--", "python3", "-m", "sand_worker");
  }

  /** Without the jail script there is no command, and the error names the script and the app. */
  @Test
  void argv_noScript_refusesNamingIt() {
    JailCommand jail = new JailCommand(Path.of("/usr/bin/python3"), Optional.empty());

    assertThatThrownBy(() -> jail.argv(ProcessSandboxRuntimeTest.spec(), BOX))
        .isInstanceOf(SandboxException.class)
        .hasMessageContaining("app 'thumbs'")
        .hasMessageContaining("sand_worker/jail.py");
  }
}
