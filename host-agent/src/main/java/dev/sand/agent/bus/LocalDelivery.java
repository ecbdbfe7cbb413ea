package dev.sand.agent.bus;

import dev.sand.bus.EventCodec;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.Keys;
import dev.sand.contracts.Topics;
import java.nio.charset.StandardCharsets;

/**
 * Puts an event that reached this host through Kafka (a hop from another host, the Kafka entry
 * path, or a lost host's work taken over) on this host's local bus, as if it had been queued here:
 * its PROCESSING copy to the agent queue first (marked redelivered: the agent tracks it in its
 * in-flight table and backs it up under this incarnation), then the event itself to its grain's
 * queue, or a timer to {@code sand:timers} at its due time. Stateless apart from the host.
 */
final class LocalDelivery {
  private final String hostId;

  LocalDelivery(String hostId) {
    this.hostId = hostId;
  }

  /**
   * Delivers {@code event}; {@code ahead}: at the head of its grain's queue. A lost host's work is
   * taken over ahead of the new work already queued here: it has waited since before the host died,
   * and the time it waits is what a host loss adds.
   */
  void deliver(RedisLocalBus bus, EventMessage event, boolean ahead) {
    EventMessage processing = event.deepCopy().setFlag(EventFlag.PROCESSING);
    processing.putToHeaders(Topics.REDELIVERED_HEADER, "1");
    bus.push(Keys.agent(hostId), processing);
    EventMessage queued = event.deepCopy().setFlag(EventFlag.QUEUED);
    if (event.getKind() == EventKind.TIMER) {
      byte[] key = Keys.timers().getBytes(StandardCharsets.UTF_8);
      double due = event.getDeadline_ms();
      bus.call("ZADD " + Keys.timers(), c -> c.zadd(key, due, EventCodec.encode(queued)));
    } else if (ahead) {
      bus.pushFirst(Keys.grain(event.getApp(), event.getTarget_grain()), queued);
    } else {
      bus.push(Keys.grain(event.getApp(), event.getTarget_grain()), queued);
    }
  }
}
