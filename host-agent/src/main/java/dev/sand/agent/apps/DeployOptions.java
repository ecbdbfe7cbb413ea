package dev.sand.agent.apps;

import dev.sand.config.SandboxConfig;
import java.util.Optional;

/**
 * How one deploy should run the app.
 *
 * @param backend the sandbox backend, or empty for the host's default
 * @param backups whether instances copy every event to the host agent for the global bus (on by
 *     default; off only to measure what the copies cost: an app deployed without them loses the
 *     in-host replay of events after a sandbox dies)
 */
public record DeployOptions(Optional<SandboxConfig.Backend> backend, boolean backups) {
  public DeployOptions {
    backend = backend == null ? Optional.empty() : backend;
  }

  /** The default backend, with backups. */
  public static DeployOptions defaults() {
    return new DeployOptions(Optional.empty(), true);
  }
}
