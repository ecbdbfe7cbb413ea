package dev.sand.agent.apps;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AppFilesTest {
  @TempDir Path apps;

  /** A requirements file outside the app is refused before pip runs. */
  @Test
  void installRequirements_outsideTheApp_isInvalid() throws Exception {
    AppFiles files = new AppFiles(apps, Path.of("/nonexistent/python"));
    Path dir = Files.createDirectories(apps.resolve("incoming"));

    assertThatThrownBy(() -> files.installRequirements(dir, "../secrets.txt"))
        .isInstanceOf(DeployException.class)
        .hasMessageContaining("must stay inside the app")
        .satisfies(
            e ->
                assertThat(((DeployException) e).reason())
                    .isEqualTo(DeployException.Reason.INVALID));
  }

  /** An upload that is no archive leaves nothing behind in the apps directory. */
  @Test
  void unpack_garbage_leavesNothingBehind() throws Exception {
    AppFiles files = new AppFiles(apps, Path.of("python3"));

    assertThatThrownBy(() -> files.unpack("not an archive".getBytes(StandardCharsets.UTF_8)))
        .isInstanceOf(DeployException.class);
    try (Stream<Path> left = Files.list(apps)) {
      assertThat(left).isEmpty();
    }
  }

  /** Placing an unpacked app moves it to its versioned directory, replacing what was there. */
  @Test
  void place_movesIntoVersionDirectory() throws Exception {
    AppFiles files = new AppFiles(apps, Path.of("python3"));
    Path incoming = Files.createDirectories(apps.resolve(".incoming-1"));
    Files.writeString(incoming.resolve("app.yaml"), "name: thumbs\n");
    Files.createDirectories(apps.resolve("thumbs/v2/stale"));

    Path dir = files.place(incoming, "thumbs", 2);

    assertThat(dir).isEqualTo(apps.resolve("thumbs/v2"));
    assertThat(dir.resolve("app.yaml")).hasContent("name: thumbs");
    assertThat(dir.resolve("stale")).doesNotExist();
    assertThat(incoming).doesNotExist();

    files.deleteApp("thumbs");
    assertThat(apps.resolve("thumbs")).doesNotExist();
  }
}
