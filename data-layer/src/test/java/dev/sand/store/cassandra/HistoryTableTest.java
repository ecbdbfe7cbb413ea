package dev.sand.store.cassandra;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.store.ExecutionStart;
import dev.sand.store.HistoryEntry;
import java.time.Instant;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class HistoryTableTest {
  private static List<HistoryEntry> batch(int size) {
    return IntStream.range(0, size).mapToObj(i -> new HistoryEntry("e", 1, "b", i, "{}")).toList();
  }

  /** Below the cap a batch is kept whole. */
  @Test
  void admitted_belowTheCap_keepsAll() {
    assertThat(HistoryTable.admitted(10, batch(5), 100)).hasSize(5);
  }

  /** The batch that reaches the cap keeps its first events up to it; later ones keep none. */
  @Test
  void admitted_atTheCap_keepsTheFirstUpToIt() {
    assertThat(HistoryTable.admitted(98, batch(5), 100))
        .extracting(HistoryEntry::index)
        .containsExactly(0, 1);
    assertThat(HistoryTable.admitted(100, batch(5), 100)).isEmpty();
    assertThat(HistoryTable.admitted(140, batch(5), 100)).isEmpty();
  }

  /** The listing's day partition is the UTC day of the start. */
  @Test
  void day_isTheUtcDayOfTheStart() {
    assertThat(ExecutionTable.day(Instant.parse("1970-01-02T23:59:59Z"))).isEqualTo(1);
    assertThat(ExecutionTable.day(Instant.parse("2026-11-24T00:00:00Z")))
        .isEqualTo((int) java.time.LocalDate.parse("2026-11-24").toEpochDay());
  }

  /** An execution's start needs no read of its history count; a redrive's does. */
  @Test
  void opened_areTheStartsThatAreNotRedrives() {
    Instant at = Instant.parse("2026-11-27T00:00:00Z");
    ExecutionStart fresh = new ExecutionStart("a", "app", "main", "{}", null, null, at, at, 0);
    ExecutionStart redriven = new ExecutionStart("b", "app", "main", "{}", null, null, at, at, 2);
    assertThat(ExecutionRecords.opened(List.of(fresh, redriven))).containsExactly("a");
  }
}
