package dev.sand.agent.apps;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.config.SandboxConfig;
import dev.sand.sandbox.SandboxId;
import dev.sand.sandbox.SandboxInfo;
import dev.sand.sandbox.SandboxRuntime;
import java.nio.file.Path;
import java.util.List;

/**
 * One application deployed on this host.
 *
 * @param name the application's name
 * @param version 1 for the first deploy, +1 per redeploy
 * @param dir the unpacked application on the host
 * @param backend where its grain workers run
 * @param runtime the runtime that holds its sandbox
 * @param sandbox the sandbox
 * @param metadata what {@code sand:app:<app>} holds (and {@code GET /v1/apps/<app>} answers)
 * @param grains the grains placed on this host (its sandbox runs their workers)
 * @param redisUser its Redis ACL user
 */
record DeployedApp(
    String name,
    int version,
    Path dir,
    SandboxConfig.Backend backend,
    SandboxRuntime runtime,
    SandboxId sandbox,
    ObjectNode metadata,
    List<String> grains,
    String redisUser) {
  DeployedApp {
    grains = List.copyOf(grains);
  }

  /** This app with {@code newMetadata}. */
  DeployedApp withMetadata(ObjectNode newMetadata) {
    return new DeployedApp(
        name, version, dir, backend, runtime, sandbox, newMetadata, grains, redisUser);
  }

  /**
   * The backend's state of the sandbox ({@code running...}, {@code exited...}), or {@code missing}.
   * Asks the runtime: blocking.
   *
   * @throws dev.sand.sandbox.SandboxException when the runtime does not answer
   */
  String sandboxState() {
    return sandboxState(runtime.listOwned());
  }

  /** The state of the sandbox among {@code owned} (a runtime's listing), or {@code missing}. */
  String sandboxState(List<SandboxInfo> owned) {
    return owned.stream()
        .filter(s -> s.id().equals(sandbox))
        .map(SandboxInfo::state)
        .findFirst()
        .orElse("missing");
  }

  /** Whether {@code state} (from {@link #sandboxState}) is a running sandbox. */
  static boolean isRunning(String state) {
    return state.startsWith("running");
  }

  /** The metadata as list and describe show it: with the sandbox and its state. */
  ObjectNode withState() {
    ObjectNode node = metadata.deepCopy();
    String state;
    try {
      state = sandboxState();
    } catch (RuntimeException e) {
      state = "unknown (" + e.getMessage() + ")";
    }
    node.put("sandbox", sandbox.value());
    node.put("state", state);
    return node;
  }
}
