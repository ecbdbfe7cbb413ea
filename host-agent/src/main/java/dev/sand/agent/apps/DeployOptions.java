package dev.sand.agent.apps;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.config.SandboxConfig;
import java.util.LinkedHashSet;
import java.util.Optional;
import java.util.Set;

/**
 * How one deploy should run the app.
 *
 * @param backend the sandbox backend, or empty for the host's default
 * @param backups whether instances copy every event to the host agent for the global bus (on by
 *     default; off only to measure what the copies cost: an app deployed without them loses the
 *     in-host replay of events after a sandbox dies)
 * @param remoteGrains grains whose events this host sends through the global bus, as if they ran on
 *     another host (a single host has no other: this measures and tests the cross-host path)
 * @param placement a placement (JSON object, as {@code placement} of {@code app.yaml}) that
 *     replaces the manifest's, or empty to keep it (decision 0013); validated with the app
 * @param owner the user who owns the app (decision 0017), or empty for an app from before users
 *     (the admins'); set by the deploy from the caller, recorded, and published in the metadata
 */
public record DeployOptions(
    Optional<SandboxConfig.Backend> backend,
    boolean backups,
    Set<String> remoteGrains,
    Optional<String> placement,
    Optional<String> owner) {
  public DeployOptions {
    backend = backend == null ? Optional.empty() : backend;
    remoteGrains = remoteGrains == null ? Set.of() : Set.copyOf(remoteGrains);
    placement = placement == null ? Optional.empty() : placement;
    owner = owner == null ? Optional.empty() : owner;
  }

  /** Options without an owner. */
  public DeployOptions(
      Optional<SandboxConfig.Backend> backend,
      boolean backups,
      Set<String> remoteGrains,
      Optional<String> placement) {
    this(backend, backups, remoteGrains, placement, Optional.empty());
  }

  /** These options with {@code owner}. */
  public DeployOptions withOwner(Optional<String> owner) {
    return new DeployOptions(backend, backups, remoteGrains, placement, owner);
  }

  /** Options without a placement override. */
  public DeployOptions(
      Optional<SandboxConfig.Backend> backend, boolean backups, Set<String> remoteGrains) {
    this(backend, backups, remoteGrains, Optional.empty());
  }

  /** The default backend, with backups, every grain local. */
  public static DeployOptions defaults() {
    return new DeployOptions(Optional.empty(), true, Set.of());
  }

  /** These options as JSON (the record of a deployment in the global data layer). */
  public String toJson(ObjectMapper mapper) {
    ObjectNode node = mapper.createObjectNode();
    backend.ifPresent(b -> node.put("backend", b.wireName()));
    node.put("backups", backups);
    node.putPOJO("remote_grains", remoteGrains.stream().sorted().toList());
    owner.ifPresent(o -> node.put("owner", o));
    placement.ifPresent(
        p -> {
          try {
            node.set("placement", mapper.readTree(p));
          } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            // parsed when the deploy was asked for: cannot happen
            throw new IllegalStateException("deploy options: placement is not JSON: " + p, e);
          }
        });
    return node.toString();
  }

  /**
   * Options read back from {@link #toJson}; unknown or missing fields take their defaults.
   *
   * @throws IllegalArgumentException when {@code json} is not a JSON object
   */
  public static DeployOptions fromJson(ObjectMapper mapper, String json) {
    JsonNode node;
    try {
      node = mapper.readTree(json);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalArgumentException("deploy options: not JSON: " + e.getOriginalMessage(), e);
    }
    if (node == null || !node.isObject()) {
      throw new IllegalArgumentException("deploy options: not a JSON object");
    }
    Optional<SandboxConfig.Backend> backend =
        node.hasNonNull("backend")
            ? Optional.of(SandboxConfig.Backend.parse(node.get("backend").asText()))
            : Optional.empty();
    Set<String> remote = new LinkedHashSet<>();
    node.path("remote_grains").forEach(g -> remote.add(g.asText()));
    Optional<String> placement =
        node.path("placement").isObject()
            ? Optional.of(node.get("placement").toString())
            : Optional.empty();
    Optional<String> owner =
        node.path("owner").isTextual() ? Optional.of(node.get("owner").asText()) : Optional.empty();
    return new DeployOptions(
        backend, node.path("backups").asBoolean(true), remote, placement, owner);
  }
}
