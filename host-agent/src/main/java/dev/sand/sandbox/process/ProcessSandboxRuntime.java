package dev.sand.sandbox.process;

import dev.sand.sandbox.ExecSpec;
import dev.sand.sandbox.SandboxId;
import dev.sand.sandbox.SandboxInfo;
import dev.sand.sandbox.SandboxRuntime;
import dev.sand.sandbox.SandboxSpec;
import java.time.Duration;
import java.util.List;

/**
 * Placeholder for the plain-process backend (sandboxes as process groups on the host, for machines
 * without Docker). Not implemented yet: every sandbox operation throws {@link
 * UnsupportedOperationException}; {@link #listOwned} returns nothing so start-up clean-up works.
 */
public final class ProcessSandboxRuntime implements SandboxRuntime {
  private static final String NOT_YET =
      "the process sandbox backend is not implemented yet; set docker.enabled to true";

  @Override
  public SandboxId create(SandboxSpec spec) {
    throw new UnsupportedOperationException(NOT_YET + " (app '" + spec.app() + "')");
  }

  @Override
  public void start(SandboxId id) {
    throw new UnsupportedOperationException(NOT_YET);
  }

  @Override
  public String exec(SandboxId id, ExecSpec spec) {
    throw new UnsupportedOperationException(NOT_YET);
  }

  @Override
  public void stop(SandboxId id, Duration grace) {
    throw new UnsupportedOperationException(NOT_YET);
  }

  @Override
  public void remove(SandboxId id) {
    throw new UnsupportedOperationException(NOT_YET);
  }

  @Override
  public List<SandboxInfo> listOwned() {
    return List.of();
  }

  @Override
  public String logs(SandboxId id, int tailLines) {
    throw new UnsupportedOperationException(NOT_YET);
  }

  @Override
  public String ping() {
    return "process backend (not implemented)";
  }

  @Override
  public void close() {}
}
