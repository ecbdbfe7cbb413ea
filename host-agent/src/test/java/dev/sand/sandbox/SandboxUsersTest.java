package dev.sand.sandbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SandboxUsersTest {
  @TempDir Path dir;

  private SandboxUsers users(Path file) {
    return new SandboxUsers(file, dir.resolve("registry/sandbox-uids"));
  }

  /** Two apps get two distinct uids from the top range, each with the gid equal to its uid. */
  @Test
  void of_twoApps_getDistinctUidsInTheRange() {
    SandboxUsers users = users(dir.resolve("uids"));

    SandboxSpec.User a = users.of("alpha");
    SandboxSpec.User b = users.of("beta");

    assertThat(a.uid()).isEqualTo(SandboxUsers.FIRST_UID);
    assertThat(b.uid()).isEqualTo(SandboxUsers.FIRST_UID + 1);
    assertThat(a.gid()).isEqualTo(a.uid());
    assertThat(users.of("alpha")).isEqualTo(a);
  }

  /** An app keeps its uid when the agent restarts (a new instance reads the same file). */
  @Test
  void of_afterRestart_keepsEveryAppsUid() {
    Path file = dir.resolve("uids");
    SandboxSpec.User a = users(file).of("alpha");
    users(file).of("beta");

    SandboxUsers restarted = users(file);

    assertThat(restarted.of("alpha")).isEqualTo(a);
    assertThat(restarted.of("gamma").uid()).isEqualTo(SandboxUsers.FIRST_UID + 2);
  }

  /** A torn last line (a crash during the write) is ignored; its uid is not handed out twice. */
  @Test
  void of_tornLine_isIgnored() throws Exception {
    Path file = dir.resolve("uids");
    Files.writeString(file, "alpha " + SandboxUsers.FIRST_UID + "\nbeta 20\n");

    SandboxUsers users = users(file);

    assertThat(users.of("beta").uid()).isEqualTo(SandboxUsers.FIRST_UID + 1);
    assertThat(Files.readString(file)).endsWith("beta " + (SandboxUsers.FIRST_UID + 1) + "\n");
  }

  /**
   * Two hosts on one machine (two state dirs) never hand out the same uid: the kernel counts
   * RLIMIT_NPROC per uid machine-wide, so a shared one would let one app's fork bomb starve the
   * other. Each claim is in the machine's registry, naming its host's file and app.
   */
  @Test
  void of_twoHostsOfOneMachine_neverShareAUid() throws Exception {
    SandboxUsers host1 = users(dir.resolve("hosts/host-1/uids"));
    SandboxUsers host2 = users(dir.resolve("hosts/host-2/uids"));

    SandboxSpec.User a = host1.of("alpha");
    SandboxSpec.User b = host2.of("beta");
    SandboxSpec.User alphaOnHost2 = host2.of("alpha");

    assertThat(List.of(a.uid(), b.uid(), alphaOnHost2.uid()))
        .containsExactly(
            SandboxUsers.FIRST_UID, SandboxUsers.FIRST_UID + 1, SandboxUsers.FIRST_UID + 2);
    assertThat(host1.of("alpha")).isEqualTo(a); // a host's own app keeps its uid
    assertThat(Files.readString(dir.resolve("registry/sandbox-uids")))
        .contains((SandboxUsers.FIRST_UID + 1) + " " + dir.resolve("hosts/host-2/uids") + " beta");
  }

  /**
   * A host whose file holds uids the registry never saw (written before the registry existed)
   * claims above them; a torn last line of the registry neither counts nor swallows the next.
   */
  @Test
  void of_registryBehindOrTorn_claimsAboveEverything() throws Exception {
    Path registry = dir.resolve("registry/sandbox-uids");
    Files.createDirectories(registry.getParent());
    Files.writeString(registry, (SandboxUsers.FIRST_UID + 3) + " /old/uids a\n2000000009 /tor");
    Path file = dir.resolve("uids");
    Files.writeString(file, "old " + (SandboxUsers.FIRST_UID + 5) + "\n");

    int first = users(file).of("new").uid();
    int second = users(dir.resolve("other")).of("next").uid();

    assertThat(first).isEqualTo(SandboxUsers.FIRST_UID + 6);
    assertThat(second).isEqualTo(SandboxUsers.FIRST_UID + 7);
    assertThat(Files.readString(registry)).contains("/tor\n" + first + " ");
  }

  /** Root is never a sandbox user. */
  @Test
  void user_root_isRefused() {
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> new SandboxSpec.User(0, 5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must not be root");
  }
}
