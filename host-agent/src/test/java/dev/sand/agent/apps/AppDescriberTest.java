package dev.sand.agent.apps;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The deploy's validation with the real Python rules (the checkout's venv and sources), as the
 * agent runs it for a deploy and for a dry run.
 */
class AppDescriberTest {
  static final Path REPO = Path.of(System.getProperty("user.dir")).getParent();
  static final ObjectMapper MAPPER = new ObjectMapper();

  @TempDir Path dir;

  private static AppDescriber describer() {
    List<Path> sources =
        Stream.of("sdk-python/src", "workflows/src", "grain-worker/src")
            .map(REPO::resolve)
            .toList();
    return new AppDescriber(
        REPO.resolve(".venv/bin/python"), SandboxSpecs.pythonPath(sources), MAPPER);
  }

  private Path hello() throws IOException {
    Path app = dir.resolve("incoming");
    Path from = REPO.resolve("examples/hello");
    try (Stream<Path> files = Files.walk(from)) {
      for (Path p : files.toList()) {
        Path to = app.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(to);
        } else {
          Files.copy(p, to);
        }
      }
    }
    return app;
  }

  @Test
  void describe_validApp_givesMetadataAndWorkflowSourcesApart() throws Exception {
    Path app = hello();

    AppDescriber.Description described =
        describer().describe(app, List.of("host-1"), Optional.empty());

    assertThat(described.app().path("name").asText()).isEqualTo("hello");
    assertThat(described.app().has("workflow_sources")).isFalse();
    ObjectNode main = (ObjectNode) described.workflowSources().get("main");
    assertThat(main.path("kind").asText()).isEqualTo("native");
    assertThat(main.path("file").asText()).isEqualTo("workflows/main.yaml");
    assertThat(main.path("source").asText())
        .isEqualTo(Files.readString(app.resolve("workflows/main.yaml")));
    assertThat(main.path("definition").path("entry").asText()).isEqualTo("normalize");
  }

  /** Problems name files relative to the app, never the agent's unpack directory. */
  @Test
  void describe_invalidApp_problemsRelativeToTheApp() throws Exception {
    Path app = hello();
    Files.writeString(app.resolve("workflows/main.yaml"), "entry: [normalize\n");

    assertThatThrownBy(() -> describer().describe(app, List.of("host-1"), Optional.empty()))
        .isInstanceOfSatisfying(
            DeployException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(DeployException.Reason.INVALID);
              assertThat(e.problems()).hasSize(1);
              assertThat(e.problems().get(0)).startsWith("workflows/main.yaml:2:");
              assertThat(e.problems().get(0)).doesNotContain(dir.toString());
            });
  }

  @Test
  void relative_stripsOnlyTheLeadingDirectory() {
    assertThat(
            AppDescriber.relative(
                "/s/apps/.incoming-1/app.yaml: name: bad", "/s/apps/.incoming-1/"))
        .isEqualTo("app.yaml: name: bad");
    assertThat(AppDescriber.relative("deploy request: placement: bad", "/s/apps/.incoming-1/"))
        .isEqualTo("deploy request: placement: bad");
  }
}
