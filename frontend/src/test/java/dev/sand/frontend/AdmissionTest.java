package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.config.AdmissionConfig;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The quota of one invocation: the app's bound, less what the host's other apps hold. */
class AdmissionTest {
  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  private final Admission admission =
      new Admission(new AdmissionConfig(10, 25, 2, false), now::get);
  private final Admission.HostBacklog host = admission.host("host-1");

  /**
   * An idle host gives an app its own bound, counting per grain on the host its queue and, while
   * its worker is ready, the instances it runs.
   */
  @Test
  void quota_idleHost_isThePerAppBound_overTheAppsGrains() {
    Admission.Quota quota = host.quota("hello", Set.of("shout", "greet"));

    assertThat(quota.limit()).isEqualTo(10);
    assertThat(Arrays.stream(quota.queues()).map(k -> new String(k, StandardCharsets.UTF_8)))
        .containsExactly(
            "sand:q:hello:greet",
            "sand:ready:hello:greet",
            "sand:metrics:hello:greet",
            "sand:q:hello:shout",
            "sand:ready:hello:shout",
            "sand:metrics:hello:shout");
  }

  /** What one app reports counts against the others at most up to the per-app bound. */
  @Test
  void saw_moreThanThePerAppBound_countsAsTheBound() {
    host.saw("greedy", 1_000_000);
    host.saw("orders", 9);

    assertThat(host.quota("hello", Set.of("greet")).limit()).isEqualTo(25 - 10 - 9);
  }

  /** Other apps' recent backlogs shrink the room the host bound leaves; the app's own does not. */
  @Test
  void quota_otherAppsBacklog_leavesLessRoom() {
    host.saw("thumbs", 9);
    host.saw("orders", 8);
    host.saw("hello", 7);

    assertThat(host.quota("hello", Set.of("greet")).limit()).isEqualTo(25 - 9 - 8);
    assertThat(host.quota("thumbs", Set.of("resize")).limit()).isEqualTo(10);
  }

  /** A backlog seen longer ago than FRESH_MS no longer counts: that app drained or went quiet. */
  @Test
  void quota_staleBacklog_isForgotten() {
    host.saw("thumbs", 10);
    host.saw("orders", 10);
    assertThat(host.quota("hello", Set.of("greet")).limit()).isEqualTo(5);

    now.addAndGet((Admission.FRESH_MS + 1) * 1_000_000L);

    assertThat(host.quota("hello", Set.of("greet")).limit()).isEqualTo(10);
  }

  /** A refusal at the app's bound names the app, the host, the count, the bound and its key. */
  @Test
  void busy_atAppBound_namesAppHostCountAndBound() {
    Admission.Quota quota = host.quota("hello", Set.of("greet"));

    Admission.Busy busy = host.busy("hello", quota, 10);

    assertThat(busy.getMessage())
        .isEqualTo(
            "application 'hello' is at its bound on host 'host-1': 10 of its events wait or"
                + " run, at most 10 per application (admission.max_queued_per_app); retry in 2"
                + " s");
    assertThat(busy.retryAfterS).isEqualTo(2);
    assertThat(busy.body()).containsEntry("retry_after_s", 2).containsKey("error");
  }

  /** A refusal at the host's bound says so, and how much of it other apps hold. */
  @Test
  void busy_atHostBound_namesTheHostBound() {
    host.saw("thumbs", 10);
    host.saw("orders", 9);
    Admission.Quota quota = host.quota("hello", Set.of("greet"));

    Admission.Busy busy = host.busy("hello", quota, 6);

    assertThat(quota.limit()).isEqualTo(6);
    assertThat(busy.getMessage())
        .contains("at the host's bound on host 'host-1': 6 of its events and about 19 of other")
        .contains("at most 25 per host (admission.max_queued_per_host)");
  }

  /** One call of {@code app} on {@code backlog}, answered after {@code rttMs} with its result. */
  private void call(Admission.HostBacklog backlog, String app, long rttMs, long backlogSeen) {
    backlog.saw(app, backlogSeen);
    long started = backlog.now();
    now.addAndGet(rttMs * 1_000_000L);
    backlog.answered(app, started, true);
  }

  /**
   * Decision 0032: with admission.adaptive the app's bound follows its calls' latency — it shrinks
   * while calls take several times their unloaded latency with the host full of its work, and grows
   * back to max_queued_per_app once they are fast again.
   */
  @Test
  void adaptive_boundShrinksWhileCallsSlowDown_andGrowsBack() {
    Admission.HostBacklog adaptive =
        new Admission(new AdmissionConfig(32, 128, 1, true), now::get).host("host-1");
    assertThat(adaptive.quota("hello", Set.of("greet")).limit()).isEqualTo(32);
    for (int i = 0; i < 20; i++) {
      call(adaptive, "hello", 50, 20);
    }
    assertThat(adaptive.quota("hello", Set.of("greet")).limit()).isEqualTo(32);
    // Vegas probes its unloaded latency again after a randomly jittered number of samples (fewer
    // the smaller its limit), so the bound may climb back within the slow phase: its low is what
    // shows the squeeze.
    long squeezed = Long.MAX_VALUE;
    String why = "";
    for (int i = 0; i < 60; i++) {
      call(adaptive, "hello", 1_000, 30);
      Admission.Quota quota = adaptive.quota("hello", Set.of("greet"));
      if (quota.limit() < squeezed) {
        squeezed = quota.limit();
        // the refusal at that moment says which bound it is, and why
        why = adaptive.busy("hello", quota, squeezed).getMessage();
      }
    }
    assertThat(squeezed).isLessThan(16);
    assertThat(why).contains("at most " + squeezed + " now").contains("admission.adaptive");
    // another app on the same host keeps its whole bound
    assertThat(adaptive.quota("thumbs", Set.of("resize")).limit()).isEqualTo(32);
    for (int i = 0; i < 200; i++) {
      call(adaptive, "hello", 50, squeezed);
    }
    assertThat(adaptive.quota("hello", Set.of("greet")).limit()).isGreaterThan(squeezed);
  }

  /** A grain that waits (the same latency however many run) keeps the whole bound. */
  @Test
  void adaptive_steadySlowCalls_keepTheWholeBound() {
    Admission.HostBacklog adaptive =
        new Admission(new AdmissionConfig(32, 128, 1, true), now::get).host("host-1");
    for (int i = 0; i < 100; i++) {
      call(adaptive, "sleepy", 30_000, 20);
    }
    assertThat(adaptive.quota("sleepy", Set.of("nap")).limit()).isEqualTo(32);
  }

  /** Without admission.adaptive the latency changes nothing. */
  @Test
  void notAdaptive_latencyChangesNothing() {
    for (int i = 0; i < 60; i++) {
      call(host, "hello", i < 20 ? 50 : 1_000, 9);
    }
    assertThat(host.quota("hello", Set.of("greet")).limit()).isEqualTo(10);
  }
}
