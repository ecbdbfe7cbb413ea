package dev.sand.sandbox;

import java.time.Duration;
import java.util.List;

/**
 * Runs application sandboxes: one per application per host (SAND paper §3.1), inside which the
 * agent starts one grain worker process per grain.
 *
 * <p>Every sandbox a runtime creates carries the owner label of its host ({@link Labels}), so
 * {@link #listOwned} finds leftovers of a previous run for clean-up. Implementations are
 * thread-safe; every method blocks until the backend answered and throws {@link SandboxException}
 * naming the sandbox when it refuses or is unreachable.
 */
public interface SandboxRuntime extends AutoCloseable {
  /** Creates (does not start) the sandbox described by {@code spec}; returns its id. */
  SandboxId create(SandboxSpec spec);

  /** Starts a created sandbox. */
  void start(SandboxId id);

  /** Stops a sandbox: SIGTERM, then SIGKILL after {@code grace}. */
  void stop(SandboxId id, Duration grace);

  /** Removes a sandbox, stopping it first if it runs. */
  void remove(SandboxId id);

  /** Every sandbox, running or not, labelled as owned by this runtime's host. */
  List<SandboxInfo> listOwned();

  /** The last {@code tailLines} lines the sandbox wrote (stdout and stderr interleaved). */
  String logs(SandboxId id, int tailLines);

  /** Checks that the backend answers; returns a short description (for logs and /health). */
  String ping();

  /** Releases the connection to the backend; does not touch sandboxes. */
  @Override
  void close();
}
