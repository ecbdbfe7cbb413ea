package dev.sand.store.cassandra;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class TaskWaitsTest {
  private static final int RETENTION_S = 86_400;
  private final TaskWaits waits = new TaskWaits(null, "sand", "nowhere", RETENTION_S);

  /** A row lives until its wait's timeout, then as long as execution records. */
  @Test
  void ttlSeconds_isTimeLeftPlusRetention() {
    assertThat(waits.ttlSeconds(1_000_000 + 59_500, 1_000_000)).isEqualTo(60 + RETENTION_S);
    // a part of a second counts whole: the row never expires before its timeout
    assertThat(waits.ttlSeconds(1_000_001, 1_000_000)).isEqualTo(1 + RETENTION_S);
  }

  /** A past or unknown timeout leaves the retention; a far one is capped at Cassandra's limit. */
  @Test
  void ttlSeconds_pastOrHuge_isBounded() {
    assertThat(waits.ttlSeconds(0, 1_000_000)).isEqualTo(RETENTION_S);
    assertThat(waits.ttlSeconds(Long.MAX_VALUE, 0)).isEqualTo(TaskWaits.MAX_TTL_SECONDS);
  }

  /** Every write is conditional: a completion and a timeout never both apply. */
  @Test
  void statements_writesAreLightweightTransactions() {
    assertThat(TaskWaits.REGISTER).endsWith("IF NOT EXISTS USING TTL ?");
    assertThat(TaskWaits.REREGISTER).endsWith("IF EXISTS");
    assertThat(TaskWaits.TIME_OUT).endsWith("IF status = ? AND beat_at = ?");
    assertThat(TaskWaits.COMPLETE).endsWith("IF status = ?");
    assertThat(TaskWaits.COMPLETE_EARLY).endsWith("IF NOT EXISTS USING TTL ?");
    assertThat(TaskWaits.HEARTBEAT).endsWith("IF status = ?");
  }
}
