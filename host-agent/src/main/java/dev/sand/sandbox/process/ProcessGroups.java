package dev.sand.sandbox.process;

import dev.sand.sandbox.SandboxException;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Stops a sandbox's process group: {@code setsid} made its main process the leader of a group of
 * its own, so a signal to the group reaches every process of the sandbox. Blocking.
 */
final class ProcessGroups {
  private ProcessGroups() {}

  /**
   * SIGTERM to {@code process}'s group, SIGKILL after {@code grace} if it still runs, and SIGKILL
   * again at the end for what outlived the main process.
   *
   * @throws SandboxException when {@code kill} cannot be run
   */
  static void stop(Process process, Duration grace) {
    // setsid made the main process the leader of its own group: signal the whole group.
    signalGroup(process.pid(), "TERM");
    try {
      if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
        signalGroup(process.pid(), "KILL");
        process.waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    // instances that outlived the main process are in the same group
    signalGroup(process.pid(), "KILL");
  }

  /** Sends {@code signal} (TERM, KILL) to process group {@code pgid}; waits for {@code kill}. */
  static void signalGroup(long pgid, String signal) {
    try {
      Process kill =
          new ProcessBuilder("kill", "-" + signal, "--", "-" + pgid)
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .start();
      kill.waitFor(5, TimeUnit.SECONDS);
    } catch (IOException e) {
      throw new SandboxException("cannot signal process group " + pgid + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
