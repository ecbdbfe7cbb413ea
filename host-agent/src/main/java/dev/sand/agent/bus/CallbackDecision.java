package dev.sand.agent.bus;

import dev.sand.contracts.TaskOutcomes;
import dev.sand.store.TaskWait;
import java.time.Instant;
import java.util.Optional;

/**
 * What a callback timer's firing does once its wait was registered and read (decision 0033, steps
 * 3b–3d): push the timer to its grain with the wait's outcome, time the wait out, or put the timer
 * back until its deadline. Pure: the caller runs the step against Cassandra and Redis (see {@link
 * CallbackWaits}); thread-safe.
 */
final class CallbackDecision {
  /** How long a timer whose row vanished waits before its next firing registers it again. */
  static final long RETRY_MS = 1000;

  /** One step of a firing. */
  sealed interface Step {}

  /**
   * Push the timer (QUEUED) to its grain with {@code outcome} in {@code HEADER_CALLBACK_OUTCOME}.
   */
  record Push(String outcome) implements Step {}

  /**
   * Time the wait out with {@code outcome} if it is still WAITING with the {@code beat_at} read;
   * then push, or decide again when that did not apply.
   */
  record TimeOut(String outcome) implements Step {}

  /** Put the timer back in {@code sand:timers} at {@code atMs}. */
  record Schedule(long atMs) implements Step {}

  private CallbackDecision() {}

  /** The step for {@code row} (empty: no row) at {@code nowMs}. */
  static Step next(Optional<TaskWait> row, long nowMs) {
    if (row.isEmpty()) {
      // registered, then gone (expired): the next firing registers it again
      return new Schedule(nowMs + RETRY_MS);
    }
    TaskWait wait = row.get();
    if (wait.status().ended()) {
      return new Push(
          wait.outcome()
              .orElseGet(
                  () ->
                      TaskOutcomes.failed(
                              TaskOutcomes.RUNTIME,
                              "the task's wait ended " + wait.status() + " without an outcome")
                          .toString()));
    }
    long deadline = deadline(wait);
    if (nowMs < deadline) {
      return new Schedule(deadline);
    }
    if (nowMs >= wait.timeoutAt()) {
      return new TimeOut(
          TaskOutcomes.failed(
                  TaskOutcomes.TIMEOUT,
                  "the task was not completed by its TimeoutSeconds (due at "
                      + Instant.ofEpochMilli(wait.timeoutAt())
                      + ")")
              .toString());
    }
    return new TimeOut(
        TaskOutcomes.failed(
                TaskOutcomes.HEARTBEAT_TIMEOUT,
                "the task sent no heartbeat for its HeartbeatSeconds ("
                    + seconds(wait.heartbeatMs())
                    + " s)")
            .toString());
  }

  private static String seconds(long ms) {
    return ms % 1000 == 0 ? Long.toString(ms / 1000) : Double.toString(ms / 1000.0);
  }

  /** The earlier of the wait's timeout and, when it needs heartbeats, its next heartbeat's due. */
  static long deadline(TaskWait wait) {
    if (wait.heartbeatMs() <= 0) {
      return wait.timeoutAt();
    }
    long beatDue =
        wait.beatAt() > Long.MAX_VALUE - wait.heartbeatMs()
            ? Long.MAX_VALUE
            : wait.beatAt() + wait.heartbeatMs();
    return Math.min(wait.timeoutAt(), beatDue);
  }
}
