package dev.sand.agent;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Brings one {@link Dependency} up and keeps watching it, on its own thread: open with doubling
 * backoff until it succeeds or {@link Timing#giveUpAfter} passes, then ping every {@link
 * Timing#pingInterval}, logging each change of state once.
 *
 * <p>{@link #snapshot} is safe from any thread. The monitor never throws: failures become states.
 */
final class DependencyMonitor implements Runnable, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(DependencyMonitor.class);

  /** What {@code /health} shows for one dependency. */
  record Snapshot(String name, DependencyStatus status, String detail) {}

  private final Dependency dependency;
  private final Timing timing;
  private final Clock clock;
  private final CompletableFuture<Void> opened = new CompletableFuture<>();
  private final Thread thread;
  private volatile Snapshot snapshot;
  private volatile boolean closed;

  DependencyMonitor(Dependency dependency, Timing timing, Clock clock) {
    this.dependency = dependency;
    this.timing = timing;
    this.clock = clock;
    this.snapshot =
        dependency.enabled()
            ? new Snapshot(
                dependency.name(), DependencyStatus.CONNECTING, "first attempt in progress")
            : new Snapshot(
                dependency.name(), DependencyStatus.DISABLED, dependency.disabledReason());
    this.thread = new Thread(this, "dependency-" + dependency.name());
    this.thread.setDaemon(true);
  }

  void start() {
    if (!dependency.enabled()) {
      LOG.atInfo()
          .addKeyValue("dependency", dependency.name())
          .addKeyValue("reason", dependency.disabledReason())
          .log("dependency disabled");
      opened.complete(null);
      return;
    }
    thread.start();
  }

  /** Completes when the dependency opened (or is disabled); fails when start-up gave up on it. */
  CompletableFuture<Void> opened() {
    return opened;
  }

  Snapshot snapshot() {
    return snapshot;
  }

  @Override
  public void run() {
    try {
      if (openWithRetries()) {
        watch();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      // close() interrupted us before open succeeded: nobody is waiting for a result any more
      opened.completeExceptionally(new IllegalStateException(dependency.name() + " closed"));
    }
  }

  private boolean openWithRetries() throws InterruptedException {
    Instant deadline = clock.instant().plus(timing.giveUpAfter());
    for (int attempt = 0; !closed; attempt++) {
      try {
        String detail = dependency.open();
        set(DependencyStatus.OK, detail);
        opened.complete(null);
        return true;
      } catch (Exception e) {
        String error = describe(e);
        if (!clock.instant().isBefore(deadline)) {
          String waited = timing.giveUpAfter().toMillis() + " ms";
          set(DependencyStatus.FAILED, "gave up after " + waited + ": " + error);
          opened.completeExceptionally(
              new StartupException(
                  dependency.name() + " still unreachable after " + waited + ": " + error));
          return false;
        }
        snapshot = new Snapshot(dependency.name(), DependencyStatus.CONNECTING, error);
        Duration delay = timing.retryDelay(attempt);
        if (attempt == 0 || attempt % 10 == 0) {
          LOG.atInfo()
              .addKeyValue("dependency", dependency.name())
              .addKeyValue("attempt", attempt + 1)
              .addKeyValue("retry_ms", delay.toMillis())
              .addKeyValue("error", error)
              .log("dependency not reachable yet");
        }
        Thread.sleep(delay.toMillis());
      }
    }
    return false;
  }

  private void watch() throws InterruptedException {
    while (!closed) {
      Thread.sleep(timing.pingInterval().toMillis());
      if (closed) {
        return;
      }
      try {
        set(DependencyStatus.OK, dependency.ping());
      } catch (Exception e) {
        set(DependencyStatus.DOWN, describe(e));
      }
    }
  }

  /** Records a state; logs only transitions so a long outage does not flood the log. */
  private void set(DependencyStatus status, String detail) {
    DependencyStatus before = snapshot.status();
    snapshot = new Snapshot(dependency.name(), status, detail);
    if (before == status) {
      return;
    }
    var event =
        switch (status) {
          case OK -> LOG.atInfo();
          case DOWN -> LOG.atWarn();
          default -> LOG.atError();
        };
    event
        .addKeyValue("dependency", dependency.name())
        .addKeyValue("status", status.word())
        .addKeyValue("was", before.word())
        .addKeyValue("detail", detail)
        .log("dependency " + status.word());
  }

  @Override
  public void close() {
    closed = true;
    thread.interrupt();
    try {
      thread.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    dependency.close();
  }

  private static String describe(Exception e) {
    String message = e.getMessage();
    return message == null || message.isBlank() ? e.getClass().getSimpleName() : message;
  }
}
