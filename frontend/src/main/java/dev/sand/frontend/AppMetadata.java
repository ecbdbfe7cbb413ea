package dev.sand.frontend;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.contracts.Names;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * What the frontend needs of a deployed application: the part of {@code sand:app:<app>} (written by
 * the host agent, decision 0004) that routes an invocation.
 *
 * @param name the application name
 * @param defaultWorkflow the workflow run when the caller names none; empty when there is none
 * @param entryGrains workflow name → the grain that receives its INVOKE event (insertion order =
 *     the order in the metadata)
 * @param payloadKb the application's own body limit ({@code limits.payload_kb}); empty when unset
 * @param backups whether its events are backed up to the global bus (deploy option; on unless
 *     turned off to measure what backups cost)
 * @param localGrains the grains placed on the host whose metadata this is (decision 0013); empty
 *     when the metadata does not say (an agent from before placement: every grain runs there)
 * @param owner the user who owns the app (decision 0017); empty for an app deployed before users
 *     existed, which only admins see
 * @param grains every grain of the app ({@code grains}; empty when the metadata does not list them)
 */
record AppMetadata(
    String name,
    Optional<String> defaultWorkflow,
    Map<String, String> entryGrains,
    OptionalInt payloadKb,
    boolean backups,
    Optional<Set<String>> localGrains,
    Optional<String> owner,
    Set<String> grains) {

  AppMetadata {
    Names.requireApp(name);
    entryGrains = Collections.unmodifiableMap(new LinkedHashMap<>(entryGrains));
    entryGrains.values().forEach(Names::requireGrain);
    localGrains = localGrains.map(Set::copyOf);
    owner = owner == null ? Optional.empty() : owner;
    grains = grains == null ? Set.of() : Set.copyOf(grains);
  }

  /**
   * The grains whose queues hold this app's work on the host of this metadata: its local grains,
   * else every grain (and the entry grains, which a listing without grains still names). What
   * admission control counts (decision 0023).
   */
  Set<String> queuedGrains() {
    if (localGrains.isPresent()) {
      return localGrains.get();
    }
    Set<String> all = new HashSet<>(grains);
    all.addAll(entryGrains.values());
    return all;
  }

  /** Whether the host of this metadata runs {@code grain} (can take events for it locally). */
  boolean runs(String grain) {
    return localGrains.map(g -> g.contains(grain)).orElse(true);
  }

  /**
   * Reads the metadata document of {@code app}.
   *
   * @throws IllegalArgumentException naming the field when the document lacks what routing needs
   */
  static AppMetadata parse(String app, JsonNode doc) {
    if (doc == null || !doc.isObject()) {
      throw new IllegalArgumentException("must be a JSON object");
    }
    JsonNode workflows = doc.path("workflows");
    if (!workflows.isObject()) {
      throw new IllegalArgumentException("'workflows' must be an object, got " + workflows);
    }
    Map<String, String> entries = new LinkedHashMap<>();
    for (Map.Entry<String, JsonNode> w : workflows.properties()) {
      JsonNode entry = w.getValue().path("entry_grain");
      if (!entry.isTextual()) {
        throw new IllegalArgumentException(
            "workflow '" + w.getKey() + "': 'entry_grain' must be a string, got " + entry);
      }
      entries.put(w.getKey(), entry.asText());
    }
    JsonNode fallback = doc.path("default_workflow");
    Optional<String> defaultWorkflow =
        fallback.isTextual() && !fallback.asText().isEmpty()
            ? Optional.of(fallback.asText())
            : Optional.empty();
    JsonNode payloadKb = doc.path("limits").path("payload_kb");
    JsonNode local = doc.path("local_grains");
    Optional<Set<String>> localGrains = Optional.empty();
    if (local.isArray()) {
      Set<String> names = new HashSet<>();
      local.forEach(g -> names.add(g.asText()));
      localGrains = Optional.of(names);
    }
    return new AppMetadata(
        app,
        defaultWorkflow,
        entries,
        payloadKb.canConvertToInt() && payloadKb.asInt() > 0
            ? OptionalInt.of(payloadKb.asInt())
            : OptionalInt.empty(),
        doc.path("backups").asBoolean(true),
        localGrains,
        doc.path("owner").isTextual() ? Optional.of(doc.get("owner").asText()) : Optional.empty(),
        grains(doc.path("grains")));
  }

  private static Set<String> grains(JsonNode grains) {
    Set<String> names = new HashSet<>();
    // written by the agent from the validated app: a name that is not one is a broken document
    grains.forEach(g -> names.add(Names.requireGrain(g.asText())));
    return names;
  }
}
