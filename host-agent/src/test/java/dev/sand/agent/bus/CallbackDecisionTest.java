package dev.sand.agent.bus;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.contracts.TaskWaitStatus;
import dev.sand.store.TaskWait;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class CallbackDecisionTest {
  private static final long NOW = 1_000_000;

  private static TaskWait waiting(long timeoutAt, long heartbeatMs, long beatAt) {
    return new TaskWait(
        "h",
        "thumbs",
        "exec-1",
        TaskWaitStatus.WAITING,
        Optional.empty(),
        timeoutAt,
        heartbeatMs,
        beatAt,
        Optional.of("host-1"),
        Optional.of(new byte[] {1, 2}));
  }

  private static TaskWait ended(TaskWaitStatus status, String outcome) {
    return new TaskWait(
        "h",
        "thumbs",
        "exec-1",
        status,
        Optional.ofNullable(outcome),
        NOW + 60_000,
        0,
        NOW - 5000,
        Optional.of("host-1"),
        Optional.of(new byte[] {1, 2}));
  }

  /** A wait a callback ended is pushed with the callback's outcome, whatever its deadline. */
  @Test
  void next_endedWithOutcome_pushesIt() {
    assertThat(
            CallbackDecision.next(
                Optional.of(ended(TaskWaitStatus.SUCCEEDED, "{\"output\":1}")), NOW))
        .isEqualTo(new CallbackDecision.Push("{\"output\":1}"));
    assertThat(
            CallbackDecision.next(
                Optional.of(ended(TaskWaitStatus.FAILED, "{\"error\":\"E\",\"cause\":\"c\"}")),
                NOW + 10_000_000))
        .isEqualTo(new CallbackDecision.Push("{\"error\":\"E\",\"cause\":\"c\"}"));
  }

  /** An ended wait without an outcome still ends the task, with States.Runtime. */
  @Test
  void next_endedWithoutOutcome_pushesRuntimeError() {
    CallbackDecision.Step step =
        CallbackDecision.next(Optional.of(ended(TaskWaitStatus.TIMED_OUT, null)), NOW);

    assertThat(step).isInstanceOf(CallbackDecision.Push.class);
    assertThat(((CallbackDecision.Push) step).outcome())
        .contains("\"error\":\"States.Runtime\"", "TIMED_OUT without an outcome");
  }

  /** A waiting task before its deadline goes back to sand:timers at its timeout. */
  @Test
  void next_waitingBeforeTimeout_schedulesAtTimeout() {
    assertThat(CallbackDecision.next(Optional.of(waiting(NOW + 60_000, 0, NOW)), NOW))
        .isEqualTo(new CallbackDecision.Schedule(NOW + 60_000));
  }

  /** With heartbeats, the deadline is the earlier of the timeout and the next heartbeat's due. */
  @Test
  void next_waitingWithHeartbeat_schedulesAtEarlierDeadline() {
    assertThat(CallbackDecision.next(Optional.of(waiting(NOW + 60_000, 10_000, NOW - 2000)), NOW))
        .isEqualTo(new CallbackDecision.Schedule(NOW + 8000));
    assertThat(CallbackDecision.next(Optional.of(waiting(NOW + 5000, 10_000, NOW)), NOW))
        .isEqualTo(new CallbackDecision.Schedule(NOW + 5000));
  }

  /** At or past its timeout a waiting task times out with States.Timeout. */
  @Test
  void next_pastTimeout_timesOutWithStatesTimeout() {
    CallbackDecision.Step step =
        CallbackDecision.next(Optional.of(waiting(NOW, 10_000, NOW - 1000)), NOW);

    assertThat(step).isInstanceOf(CallbackDecision.TimeOut.class);
    assertThat(((CallbackDecision.TimeOut) step).outcome())
        .contains("\"error\":\"States.Timeout\"", "TimeoutSeconds");
  }

  /** A heartbeat overdue before the timeout times out with States.HeartbeatTimeout, naming it. */
  @Test
  void next_heartbeatOverdue_timesOutWithHeartbeatTimeout() {
    CallbackDecision.Step step =
        CallbackDecision.next(Optional.of(waiting(NOW + 60_000, 30_000, NOW - 30_000)), NOW);

    assertThat(step).isInstanceOf(CallbackDecision.TimeOut.class);
    assertThat(((CallbackDecision.TimeOut) step).outcome())
        .contains("\"error\":\"States.HeartbeatTimeout\"", "HeartbeatSeconds (30 s)");
  }

  /** A row gone after registration (expired) is retried a second later: that firing registers. */
  @Test
  void next_noRow_schedulesRetry() {
    assertThat(CallbackDecision.next(Optional.empty(), NOW))
        .isEqualTo(new CallbackDecision.Schedule(NOW + CallbackDecision.RETRY_MS));
  }

  /** A far beat plus a heartbeat does not overflow into the past. */
  @Test
  void deadline_hugeValues_doNotOverflow() {
    assertThat(CallbackDecision.deadline(waiting(Long.MAX_VALUE, Long.MAX_VALUE, NOW)))
        .isEqualTo(Long.MAX_VALUE);
  }
}
