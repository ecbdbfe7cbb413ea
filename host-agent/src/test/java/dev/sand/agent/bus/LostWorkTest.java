package dev.sand.agent.bus;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.agent.apps.Executions;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventMessage;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class LostWorkTest {
  private static final String SELF = "me";
  private static final String DEAD = "dead-incarnation";
  private static final long MADE_MS = 1_000_000;

  private final List<EventMessage> delivered = new ArrayList<>();
  private final List<Set<String>> asked = new ArrayList<>();

  private LostWork lostWork(Function<Set<String>, Map<String, Instant>> ends) {
    return new LostWork(
        "host-2",
        SELF,
        (bus, event, ahead) -> delivered.add(event),
        ids -> {
          asked.add(ids);
          return ends.apply(ids);
        },
        new Executions("host-2", Clock.systemUTC()),
        (app, line) -> {});
  }

  private static EventMessage event(String id, EventFlag flag) {
    return PartitionFlagsTest.event(id, flag).setCreated_ms(MADE_MS);
  }

  /** The flags of one partition where a dead host had taken {@code ids} (caught up). */
  private static PartitionFlags takenByDeadHost(String... ids) {
    PartitionFlags flags = new PartitionFlags(0, 0);
    long offset = 0;
    for (String id : ids) {
      flags.read(offset++, event(id, EventFlag.PROCESSING), DEAD, SELF, 0);
    }
    return flags;
  }

  private static List<LostWork.Orphan> orphans(PartitionFlags flags) {
    return flags.orphans(u -> u.incarnation().equals(DEAD)).stream()
        .map(u -> new LostWork.Orphan(flags, u))
        .toList();
  }

  /**
   * An event whose execution ended after the event was made (its result landed, its FINISHED flag
   * did not) is not run again, and no longer holds the partition's commit back.
   */
  @Test
  void takeOver_executionEndedAfterTheEvent_isSkippedAndForgotten() {
    PartitionFlags flags = takenByDeadHost("e1", "e2");
    LostWork lost = lostWork(ids -> Map.of("xe1", Instant.ofEpochMilli(MADE_MS + 500)));

    lost.takeOver(null, orphans(flags));

    assertThat(delivered).extracting(EventMessage::getEvent_id).containsExactly("e2");
    assertThat(delivered.get(0).getAttempt()).isEqualTo(1);
    assertThat(lost.skipped.get()).isEqualTo(1);
    assertThat(lost.replayed.get()).isEqualTo(1);
    assertThat(asked).singleElement().isEqualTo(Set.of("xe1", "xe2"));
    // e1 is gone from the partition's unfinished work; e2 is now this host's
    assertThat(flags.unfinishedCount()).isEqualTo(1);
    assertThat(flags.orphans(u -> u.incarnation().equals(DEAD))).isEmpty();
  }

  /**
   * An end older than the event is a redrive's: the event belongs to the run after that end, so it
   * is replayed.
   */
  @Test
  void takeOver_endBeforeTheEvent_isARedrive_andIsReplayed() {
    PartitionFlags flags = takenByDeadHost("e1");
    LostWork lost = lostWork(ids -> Map.of("xe1", Instant.ofEpochMilli(MADE_MS - 1)));

    lost.takeOver(null, orphans(flags));

    assertThat(delivered).extracting(EventMessage::getEvent_id).containsExactly("e1");
    assertThat(lost.skipped.get()).isZero();
  }

  /** When the ends cannot be read, everything is replayed, as without the check. */
  @Test
  void takeOver_endsUnreadable_replaysEverything() {
    PartitionFlags flags = takenByDeadHost("e1", "e2");
    LostWork lost =
        lostWork(
            ids -> {
              throw new IllegalStateException("cassandra is not connected");
            });

    lost.takeOver(null, orphans(flags));

    assertThat(delivered).extracting(EventMessage::getEvent_id).containsExactly("e1", "e2");
    assertThat(lost.replayed.get()).isEqualTo(2);
  }

  /**
   * An event nobody took is delivered as it is (first attempt) — unless its execution has ended.
   */
  @Test
  void takeOver_untakenEvents_deliveredAsFirstAttempt_unlessEnded() {
    PartitionFlags flags = new PartitionFlags(0, 3); // QUEUED read before catching up: nobody's
    flags.read(0, event("e1", EventFlag.QUEUED), "", SELF, 0);
    flags.read(1, event("e2", EventFlag.QUEUED), "", SELF, 0);
    flags.read(2, event("e0", EventFlag.FINISHED), DEAD, SELF, 0); // caught up
    LostWork lost = lostWork(ids -> Map.of("xe2", Instant.ofEpochMilli(MADE_MS)));

    lost.takeOver(null, orphans(flags));

    assertThat(delivered).singleElement().satisfies(e -> assertThat(e.getAttempt()).isZero());
    assertThat(delivered.get(0).getEvent_id()).isEqualTo("e1");
    assertThat(lost.delivered.get()).isEqualTo(1);
    assertThat(lost.skipped.get()).isEqualTo(1);
  }
}
