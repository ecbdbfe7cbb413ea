package dev.sand.agent.bus;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import java.util.List;
import org.junit.jupiter.api.Test;

class PartitionFlagsTest {
  private static final String SELF = "me";

  /** A task event {@code id} of execution {@code x<id>} with {@code flag}. */
  static EventMessage event(String id, EventFlag flag) {
    return new EventMessage()
        .setEvent_id(id)
        .setExecution_id("x" + id)
        .setKind(EventKind.TASK)
        .setFlag(flag)
        .setApp("a")
        .setTarget_grain("g");
  }

  /** The commit never passes the first event without a final flag. */
  @Test
  void committable_stopsAtFirstUnfinished() {
    PartitionFlags flags = new PartitionFlags(0, 0);
    flags.read(0, event("e1", EventFlag.PROCESSING), "h1", SELF, 0);
    flags.read(1, event("e2", EventFlag.PROCESSING), "h1", SELF, 0);
    flags.read(2, event("e2", EventFlag.FINISHED), "h1", SELF, 0);

    assertThat(flags.committable()).isEqualTo(0);

    flags.read(3, event("e1", EventFlag.FINISHED), "h1", SELF, 0);
    assertThat(flags.committable()).isEqualTo(4);
    assertThat(flags.unfinishedCount()).isZero();
  }

  /** toCommit answers only when the committable offset moved. */
  @Test
  void toCommit_onlyWhenMoved() {
    PartitionFlags flags = new PartitionFlags(5, 5);
    assertThat(flags.toCommit()).isEqualTo(-1);
    flags.read(5, event("e1", EventFlag.PROCESSING), "h1", SELF, 0);
    assertThat(flags.toCommit()).isEqualTo(-1);
    flags.read(6, event("e1", EventFlag.FINISHED), "h1", SELF, 0);
    assertThat(flags.toCommit()).isEqualTo(7);
    assertThat(flags.toCommit()).isEqualTo(-1); // being committed
    flags.committed(7, true);
    assertThat(flags.toCommit()).isEqualTo(-1);
  }

  /** A commit the broker refused (a rebalance) is tried again. */
  @Test
  void toCommit_refusedCommit_isTriedAgain() {
    PartitionFlags flags = new PartitionFlags(0, 0);
    flags.read(0, event("e1", EventFlag.FINISHED), "h1", SELF, 0);
    assertThat(flags.toCommit()).isEqualTo(1);
    flags.committed(1, false);
    assertThat(flags.toCommit()).isEqualTo(1);
  }

  /** A FAILED flag ends an event like FINISHED. */
  @Test
  void failed_endsTheEvent() {
    PartitionFlags flags = new PartitionFlags(0, 0);
    flags.read(0, event("e1", EventFlag.PROCESSING), "h1", SELF, 0);
    flags.read(1, event("e1", EventFlag.FAILED), "h1", SELF, 0);
    assertThat(flags.orphans(u -> true)).isEmpty();
  }

  /** A final flag read before the PROCESSING record (a frontend's late backup) still wins. */
  @Test
  void finishedBeforeProcessing_isNotWork() {
    PartitionFlags flags = new PartitionFlags(0, 0);
    flags.read(0, event("e1", EventFlag.FINISHED), "h1", SELF, 0);
    flags.read(1, event("e1", EventFlag.PROCESSING), "h1", SELF, 0);

    assertThat(flags.unfinishedCount()).isZero();
    assertThat(flags.committable()).isEqualTo(2);
  }

  /** Caught up, a QUEUED event is delivered at once, once, and taken by this agent. */
  @Test
  void queued_caughtUp_deliveredOnceAndTaken() {
    PartitionFlags flags = new PartitionFlags(0, 0);
    assertThat(flags.read(0, event("e1", EventFlag.QUEUED), "", SELF, 0)).isTrue();
    assertThat(flags.read(1, event("e1", EventFlag.QUEUED), "", SELF, 0)).isFalse();
    assertThat(flags.orphans(u -> !u.incarnation().equals(SELF))).isEmpty();
  }

  /** Before catching up, nothing is delivered and nothing is an orphan: the decision waits. */
  @Test
  void notCaughtUp_decidesNothing() {
    PartitionFlags flags = new PartitionFlags(0, 3);
    assertThat(flags.read(0, event("e1", EventFlag.QUEUED), "", SELF, 0)).isFalse();
    flags.read(1, event("e2", EventFlag.PROCESSING), "dead", SELF, 0);
    assertThat(flags.caughtUp()).isFalse();
    assertThat(flags.orphans(u -> true)).isEmpty();

    flags.read(2, event("e3", EventFlag.PROCESSING), "alive", SELF, 0);

    assertThat(flags.caughtUp()).isTrue();
    List<PartitionFlags.Unfinished> orphans = flags.orphans(u -> u.incarnation().equals("dead"));
    assertThat(orphans)
        .extracting(PartitionFlags.Unfinished::eventId)
        .containsExactly("e1", "e2"); // e1: queued and never taken; e2: its host is gone
  }

  /** A replayed event is adopted: it is no longer an orphan, and its first offset still holds. */
  @Test
  void adopt_keepsFirstOffsetAndEndsOrphanhood() {
    PartitionFlags flags = new PartitionFlags(0, 0);
    flags.read(0, event("e1", EventFlag.PROCESSING), "dead", SELF, 0);
    flags.adopt("e1", SELF, event("e1", EventFlag.QUEUED).setAttempt(1));

    assertThat(flags.orphans(u -> u.incarnation().equals("dead"))).isEmpty();
    assertThat(flags.committable()).isEqualTo(0);

    // the replay's own PROCESSING record, read back later, keeps the first offset too
    flags.read(7, event("e1", EventFlag.PROCESSING), SELF, SELF, 0);
    assertThat(flags.committable()).isEqualTo(0);
  }

  /**
   * A forgotten event (its execution failed for good) ends, and a late record does not revive it.
   */
  @Test
  void forget_endsTheEvent() {
    PartitionFlags flags = new PartitionFlags(0, 0);
    flags.read(0, event("e1", EventFlag.PROCESSING), "dead", SELF, 0);
    flags.forget("e1");
    flags.read(1, event("e1", EventFlag.PROCESSING), "dead", SELF, 0);
    assertThat(flags.unfinishedCount()).isZero();
  }

  /** A PROCESSING record without an incarnation is someone's work, not a delivery nobody took. */
  @Test
  void processingWithoutIncarnation_isNotNobodys() {
    PartitionFlags flags = new PartitionFlags(0, 0);
    flags.read(0, event("e1", EventFlag.PROCESSING), "", SELF, 0);
    assertThat(flags.orphans(u -> false)).isEmpty();
    assertThat(flags.orphans(u -> u.incarnation().equals(PartitionFlags.UNKNOWN))).hasSize(1);
  }
}
