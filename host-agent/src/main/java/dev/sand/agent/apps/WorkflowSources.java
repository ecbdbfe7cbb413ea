package dev.sand.agent.apps;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The workflow definitions of the apps this host knows, as the validator read them at deploy
 * (parsed JSON and source text), for {@code GET /v1/apps/{app}/workflows/{workflow}}.
 *
 * <p>Kept in memory from the deploy's own validation rather than read again from the app's
 * directory: an app placed on other hosts has no directory here (decision 0013), and the answer
 * then needs no Python run and no YAML parser in Java. A restarted agent fills it again, since it
 * deploys (and so validates) every app on record. Thread-safe; no method blocks.
 */
final class WorkflowSources {
  private final Map<String, ObjectNode> byApp = new ConcurrentHashMap<>();

  /** Keeps {@code sources} (the validator's {@code workflow_sources}) for {@code app}. */
  void put(String app, ObjectNode sources) {
    byApp.put(app, sources.deepCopy());
  }

  /** Forgets {@code app}. */
  void remove(String app) {
    byApp.remove(app);
  }

  /**
   * {@code {"app", "workflow", "kind", "file", "definition", "source"}} of {@code workflow} in
   * {@code app}, or empty when either is unknown.
   */
  Optional<ObjectNode> find(String app, String workflow) {
    ObjectNode sources = byApp.get(app);
    JsonNode found = sources == null ? null : sources.get(workflow);
    if (found == null || !found.isObject()) {
      return Optional.empty();
    }
    ObjectNode answer = sources.objectNode();
    answer.put("app", app);
    answer.put("workflow", workflow);
    answer.set("kind", found.path("kind"));
    answer.set("file", found.path("file"));
    answer.set("definition", found.path("definition"));
    answer.set("source", found.path("source"));
    return Optional.of(answer);
  }
}
