package dev.sand.agent.bus;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.bus.thrift.EventMessage;
import java.util.Set;
import org.junit.jupiter.api.Test;

class MembershipTest {
  private static PartitionFlags.Unfinished work(String incarnation, long seenMs) {
    return new PartitionFlags.Unfinished("e", 0, new EventMessage(), incarnation, seenMs);
  }

  /** The incarnation is the client id's last segment, whatever dashes the host id has. */
  @Test
  void clientId_roundTrips() {
    String id = Membership.clientId("host-2", "abc123");
    assertThat(id).isEqualTo("sand-bus-host-2-abc123");
    assertThat(Membership.incarnationOf(id)).isEqualTo("abc123");
    assertThat(Membership.incarnationOf("sand-results-host-1")).isEmpty();
  }

  /** Nothing is dead before the group was ever described. */
  @Test
  void unknownGroup_nothingDead() {
    Membership members = new Membership("me");
    assertThat(members.dead(work("other", 0), 1_000_000)).isFalse();
  }

  /** An incarnation seen alive and now gone is dead at once; a live one never is. */
  @Test
  void seenThenGone_deadAtOnce() {
    Membership members = new Membership("me");
    members.update(Set.of("me", "other"));
    assertThat(members.dead(work("other", 0), 0)).isFalse();

    members.update(Set.of("me"));

    assertThat(members.dead(work("other", 0), 0)).isTrue();
    assertThat(members.dead(work("me", 0), 0)).isFalse();
  }

  /** One never seen (still joining, or dead before we started) is dead only after the grace. */
  @Test
  void neverSeen_deadAfterGrace() {
    Membership members = new Membership("me");
    members.update(Set.of("me"));

    assertThat(members.dead(work("new", 100), 100 + Membership.UNSEEN_GRACE_MS - 1)).isFalse();
    assertThat(members.dead(work("new", 100), 100 + Membership.UNSEEN_GRACE_MS)).isTrue();
  }
}
