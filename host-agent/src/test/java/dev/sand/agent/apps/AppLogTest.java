package dev.sand.agent.apps;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

class AppLogTest {
  private final AppLog log =
      new AppLog(Clock.fixed(Instant.parse("2026-01-02T03:04:05Z"), ZoneOffset.UTC));

  /** Notes are kept per app, timestamped, oldest first. */
  @Test
  void note_keepsLinesPerAppWithTheirTime() {
    log.note("a", "deployed");
    log.note("b", "other");
    log.note("a", "restarted");

    assertThat(log.lines("a"))
        .containsExactly("2026-01-02T03:04:05Z deployed", "2026-01-02T03:04:05Z restarted");
    assertThat(log.lines("never")).isEmpty();
  }

  /** Only the last lines are kept, so a flapping app cannot fill the agent's memory. */
  @Test
  void note_overTheLimit_dropsTheOldest() {
    for (int i = 0; i < AppLog.LINES + 5; i++) {
      log.note("a", "line " + i);
    }

    assertThat(log.lines("a")).hasSize(AppLog.LINES);
    assertThat(log.lines("a").get(0)).endsWith(" line 5");
  }
}
