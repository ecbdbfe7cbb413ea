package dev.sand.sandbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SandboxUsersTest {
  @TempDir Path dir;

  /** Two apps get two distinct uids from the top range, each with the gid equal to its uid. */
  @Test
  void of_twoApps_getDistinctUidsInTheRange() {
    SandboxUsers users = new SandboxUsers(dir.resolve("uids"));

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
    SandboxSpec.User a = new SandboxUsers(file).of("alpha");
    new SandboxUsers(file).of("beta");

    SandboxUsers restarted = new SandboxUsers(file);

    assertThat(restarted.of("alpha")).isEqualTo(a);
    assertThat(restarted.of("gamma").uid()).isEqualTo(SandboxUsers.FIRST_UID + 2);
  }

  /** A torn last line (a crash during the write) is ignored; its uid is not handed out twice. */
  @Test
  void of_tornLine_isIgnored() throws Exception {
    Path file = dir.resolve("uids");
    Files.writeString(file, "alpha " + SandboxUsers.FIRST_UID + "\nbeta 20\n");

    SandboxUsers users = new SandboxUsers(file);

    assertThat(users.of("beta").uid()).isEqualTo(SandboxUsers.FIRST_UID + 1);
    assertThat(Files.readString(file)).endsWith("beta " + (SandboxUsers.FIRST_UID + 1) + "\n");
  }

  /** Root is never a sandbox user. */
  @Test
  void user_root_isRefused() {
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> new SandboxSpec.User(0, 5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must not be root");
  }
}
