package dev.sand.agent.apps;

import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.contracts.Keys;
import dev.sand.sandbox.SandboxException;
import dev.sand.sandbox.SandboxId;
import dev.sand.sandbox.SandboxRuntime;
import dev.sand.sandbox.SandboxSpec;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts an app's sandbox and waits until every grain worker in it is ready (its {@code
 * sand:ready:<app>:<grain>} key exists); stops and removes sandboxes. Blocking; thread-safe.
 */
final class SandboxLauncher {
  private static final Logger LOG = LoggerFactory.getLogger(SandboxLauncher.class);
  private static final Duration STOP_GRACE = Duration.ofSeconds(3);
  private static final long POLL_MS = 50;
  private static final int OUTPUT_LINES = 30;

  private final Duration readyTimeout;

  /**
   * @param readyTimeout how long the grain workers of a sandbox may take to get ready
   */
  SandboxLauncher(Duration readyTimeout) {
    this.readyTimeout = readyTimeout;
  }

  /**
   * Creates and starts the sandbox of {@code spec}.
   *
   * @throws DeployException (UNAVAILABLE) when the runtime refuses
   */
  SandboxId launch(SandboxRuntime runtime, SandboxSpec spec) {
    try {
      SandboxId sandbox = runtime.create(spec);
      runtime.start(sandbox);
      return sandbox;
    } catch (SandboxException e) {
      throw new DeployException(
          DeployException.Reason.UNAVAILABLE,
          "cannot start the sandbox of '" + spec.app() + "': " + e.getMessage());
    }
  }

  /**
   * Waits until every grain worker of {@code app} is ready.
   *
   * @throws DeployException (INTERNAL) with the sandbox's last output when the sandbox stops or the
   *     workers are not ready in time
   */
  void awaitWorkers(DeployedApp app, RedisLocalBus bus) {
    long deadline = System.nanoTime() + readyTimeout.toNanos();
    while (true) {
      long ready =
          app.grains().stream().filter(g -> bus.get(Keys.ready(app.name(), g)).isPresent()).count();
      if (ready == app.grains().size()) {
        return;
      }
      String state = app.sandboxState();
      boolean running = DeployedApp.isRunning(state);
      if (!running || System.nanoTime() > deadline) {
        String why =
            running
                ? "only "
                    + ready
                    + " of "
                    + app.grains().size()
                    + " grain workers were ready after "
                    + readyTimeout.toSeconds()
                    + " s"
                : "the sandbox is " + state;
        throw new DeployException(
            DeployException.Reason.INTERNAL,
            "the grain workers of '"
                + app.name()
                + "' did not start: "
                + why
                + "; output:\n"
                + lastOutput(app));
      }
      sleep(POLL_MS);
    }
  }

  /** Stops the sandbox of {@code app} (SIGTERM, SIGKILL after a grace) and removes it. */
  static void stop(DeployedApp app) {
    try {
      app.runtime().stop(app.sandbox(), STOP_GRACE);
    } catch (SandboxException e) {
      refused(app, "stop", e);
    }
    remove(app);
  }

  /** Removes the sandbox of {@code app}, stopping it first; logs it when the runtime refuses. */
  static void remove(DeployedApp app) {
    try {
      app.runtime().remove(app.sandbox());
    } catch (SandboxException e) {
      refused(app, "remove", e);
    }
  }

  // clean-up goes on when the runtime refuses: what is left is an orphan, removed at start-up
  private static void refused(DeployedApp app, String what, SandboxException e) {
    LOG.atWarn()
        .addKeyValue("app", app.name())
        .addKeyValue("error", e.getMessage())
        .log(what + " failed");
  }

  private static String lastOutput(DeployedApp app) {
    try {
      return AppDescriber.lastLines(app.runtime().logs(app.sandbox(), OUTPUT_LINES), OUTPUT_LINES);
    } catch (RuntimeException e) {
      return "(no output: " + e.getMessage() + ")";
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new DeployException(DeployException.Reason.INTERNAL, "interrupted");
    }
  }
}
