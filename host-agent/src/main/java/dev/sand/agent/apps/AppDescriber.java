package dev.sand.agent.apps;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Validates an unpacked application with the Python rules ({@code python -m sand_worker.describe})
 * — the same ones {@code sand validate} and the emulator apply, so Java never re-implements them —
 * and returns its description.
 *
 * <p>Problems are answered relative to the app: the validator names files by their path, which here
 * is the agent's private unpack directory; the caller knows the app's own layout only ({@code
 * workflows/main.yaml: States.A.Next: ...}).
 */
final class AppDescriber {
  private static final long TIMEOUT_S = 60;

  private final Path python;
  private final String pythonPath;
  private final ObjectMapper mapper;

  AppDescriber(Path python, String pythonPath, ObjectMapper mapper) {
    this.python = python;
    this.pythonPath = pythonPath;
    this.mapper = mapper;
  }

  /**
   * What the validator answers for a valid app.
   *
   * @param app the description stored as the app's metadata
   * @param workflowSources per workflow: {@code file}, {@code kind}, {@code definition}, {@code
   *     source} (kept beside the metadata, not in it)
   */
  record Description(ObjectNode app, ObjectNode workflowSources) {}

  /**
   * The description of the app in {@code dir}: name, grains, workflows with their entry grains,
   * limits, requirements, and its placement resolved on {@code clusterHosts} (decision 0013).
   * Blocking (runs Python, up to a minute).
   *
   * @param clusterHosts the cluster's host ids: the only hosts a placement may name
   * @param placement a placement (JSON object) replacing the manifest's, or empty
   * @throws DeployException (INVALID) listing every problem when the app is invalid; (INTERNAL)
   *     when the validator itself cannot run
   */
  Description describe(Path dir, List<String> clusterHosts, Optional<String> placement) {
    List<String> command =
        new ArrayList<>(
            List.of(
                python.toString(),
                "-m",
                "sand_worker.describe",
                dir.toString(),
                "--hosts",
                String.join(",", clusterHosts)));
    placement.ifPresent(
        p -> {
          command.add("--placement");
          command.add(p);
        });
    ProcessBuilder builder = new ProcessBuilder(command);
    builder.environment().put("PYTHONPATH", pythonPath);
    builder.environment().put("PYTHONDONTWRITEBYTECODE", "1");
    builder.redirectErrorStream(false);
    String stdout;
    String stderr;
    int code;
    try {
      Process process = builder.start();
      process.getOutputStream().close();
      var err = process.getErrorStream();
      stdout = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      stderr = new String(err.readAllBytes(), StandardCharsets.UTF_8);
      if (!process.waitFor(TIMEOUT_S, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new DeployException(
            DeployException.Reason.INTERNAL, "validating the app took over " + TIMEOUT_S + " s");
      }
      code = process.exitValue();
    } catch (IOException e) {
      throw new DeployException(
          DeployException.Reason.INTERNAL,
          "cannot run the validator " + python + ": " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new DeployException(
          DeployException.Reason.INTERNAL, "interrupted while validating the app");
    }
    JsonNode doc;
    try {
      doc = mapper.readTree(stdout);
    } catch (IOException e) {
      doc = null;
    }
    if (doc == null || !doc.isObject()) {
      throw new DeployException(
          DeployException.Reason.INTERNAL,
          "the validator failed (exit " + code + "): " + lastLines(stderr + stdout, 10));
    }
    if (!doc.path("ok").asBoolean(false)) {
      List<String> problems = new ArrayList<>();
      String prefix = dir.toAbsolutePath() + "/";
      doc.path("problems").forEach(p -> problems.add(relative(p.asText(), prefix)));
      throw new DeployException(
          DeployException.Reason.INVALID,
          problems.isEmpty() ? List.of("the app is invalid") : problems);
    }
    JsonNode sources = doc.path("workflow_sources");
    return new Description(
        (ObjectNode) doc.get("app"),
        sources.isObject() ? (ObjectNode) sources : mapper.createObjectNode());
  }

  /** {@code problem} without the leading {@code prefix} (the unpack directory) of its file. */
  static String relative(String problem, String prefix) {
    return problem.startsWith(prefix) ? problem.substring(prefix.length()) : problem;
  }

  static String lastLines(String text, int lines) {
    String[] all = text.strip().split("\n");
    int from = Math.max(0, all.length - lines);
    return String.join("\n", List.of(all).subList(from, all.length));
  }
}
