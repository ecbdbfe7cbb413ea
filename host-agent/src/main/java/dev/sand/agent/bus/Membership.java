package dev.sand.agent.bus;

import dev.sand.contracts.Topics;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.common.GroupState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which host agent incarnations are alive: the members of the hosts' consumer group, each named by
 * its client id {@code sand-bus-<host>-<incarnation>} (decision 0011). Kafka's group membership is
 * the failure detector: a member that stops heartbeating leaves the group after the session
 * timeout.
 *
 * <p>An incarnation seen alive and now gone is dead at once. One never seen (a host that died
 * before this agent started, or one that is still joining) is dead only once its work has waited
 * {@link #UNSEEN_GRACE_MS}: a host that is starting already backs up work before it joins the
 * group. Not thread-safe: the global bus thread owns it.
 */
final class Membership {
  static final long UNSEEN_GRACE_MS = 10_000;
  private static final Logger LOG = LoggerFactory.getLogger(Membership.class);
  private static final String PREFIX = "sand-bus-";

  private final String self;
  private final Set<String> live = new HashSet<>();
  private final Set<String> seen = new HashSet<>();
  private boolean known;

  Membership(String self) {
    this.self = self;
    live.add(self);
    seen.add(self);
  }

  /** The client id of {@code incarnation} of {@code hostId}. */
  static String clientId(String hostId, String incarnation) {
    return PREFIX + hostId + "-" + incarnation;
  }

  /** The incarnation a client id names, or empty when it is not one of ours. */
  static String incarnationOf(String clientId) {
    if (!clientId.startsWith(PREFIX) || clientId.lastIndexOf('-') < PREFIX.length()) {
      return "";
    }
    return clientId.substring(clientId.lastIndexOf('-') + 1);
  }

  /**
   * Asks the group coordinator who is in the group. Keeps the previous answer when the group is
   * rebalancing (members that are rejoining would look dead) or the broker does not answer.
   *
   * @return whether the answer is fresh
   */
  boolean refresh(Admin admin, long timeoutMs) {
    try {
      ConsumerGroupDescription group =
          admin
              .describeConsumerGroups(List.of(Topics.HOSTS_GROUP))
              .describedGroups()
              .get(Topics.HOSTS_GROUP)
              .get(timeoutMs, TimeUnit.MILLISECONDS);
      if (group.groupState() != GroupState.STABLE) {
        return false;
      }
      Set<String> now = new HashSet<>();
      for (MemberDescription member : group.members()) {
        String incarnation = incarnationOf(member.clientId());
        if (!incarnation.isEmpty()) {
          now.add(incarnation);
        }
      }
      if (!now.contains(self)) {
        return false; // our own join is not visible yet: the answer is older than us
      }
      update(now);
      return true;
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      LOG.atDebug().addKeyValue("error", e.toString()).log("group description failed");
      return false;
    }
  }

  /** Takes {@code members} (incarnations) as the live set. */
  void update(Set<String> members) {
    live.clear();
    live.addAll(members);
    live.add(self);
    seen.addAll(members);
    known = true;
  }

  /** Whether the live set was ever learnt. */
  boolean known() {
    return known;
  }

  /** Whether the work of {@code u} belongs to an incarnation that is gone. */
  boolean dead(PartitionFlags.Unfinished u, long nowMs) {
    String incarnation = u.incarnation();
    if (!known || live.contains(incarnation)) {
      return false;
    }
    return seen.contains(incarnation) || nowMs - u.seenMs() >= UNSEEN_GRACE_MS;
  }
}
