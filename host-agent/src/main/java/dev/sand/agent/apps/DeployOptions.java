package dev.sand.agent.apps;

import dev.sand.config.SandboxConfig;
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
 */
public record DeployOptions(
    Optional<SandboxConfig.Backend> backend, boolean backups, Set<String> remoteGrains) {
  public DeployOptions {
    backend = backend == null ? Optional.empty() : backend;
    remoteGrains = remoteGrains == null ? Set.of() : Set.copyOf(remoteGrains);
  }

  /** The default backend, with backups, every grain local. */
  public static DeployOptions defaults() {
    return new DeployOptions(Optional.empty(), true, Set.of());
  }
}
