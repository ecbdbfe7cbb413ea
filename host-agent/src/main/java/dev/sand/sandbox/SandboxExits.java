package dev.sand.sandbox;

import java.time.Duration;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * The wake-up of the agent's watchdog: a runtime signals it when one of its sandboxes stops running
 * (Docker's event stream, a process's exit), and the watchdog waits on it instead of listing every
 * sandbox twice a second. A signal is a hint, never the only check: the watchdog also looks on a
 * slow timer, so a missed signal (a reconnecting event stream) only delays a restart. Thread-safe;
 * {@link #signal} never blocks.
 */
public final class SandboxExits {
  private final Semaphore signals = new Semaphore(0);

  /** Says that some sandbox may have stopped. */
  public void signal() {
    signals.release();
  }

  /**
   * Blocks until a signal or {@code timeout}; consumes every signal given so far (one look covers
   * them all).
   *
   * @return whether a signal came
   * @throws InterruptedException when the waiting thread is interrupted
   */
  public boolean await(Duration timeout) throws InterruptedException {
    boolean signalled = signals.tryAcquire(timeout.toMillis(), TimeUnit.MILLISECONDS);
    signals.drainPermits();
    return signalled;
  }
}
