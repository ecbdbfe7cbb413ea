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
  private final Admission admission = new Admission(new AdmissionConfig(10, 25, 2), now::get);
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
}
