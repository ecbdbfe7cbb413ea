package dev.sand.agent.apps;

import dev.sand.config.SandboxConfig;
import dev.sand.sandbox.SandboxRuntime;

/**
 * Where and how one deploy runs the app's sandbox.
 *
 * @param backend the chosen backend
 * @param runtime the runtime of that backend
 * @param options the deploy's options (backups, remote grains)
 * @param placement which hosts run which grains (this sandbox runs the grains placed here)
 */
record SandboxPlan(
    SandboxConfig.Backend backend,
    SandboxRuntime runtime,
    DeployOptions options,
    Placement placement) {}
