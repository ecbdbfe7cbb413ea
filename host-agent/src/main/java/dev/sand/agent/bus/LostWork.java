package dev.sand.agent.bus;

import dev.sand.agent.apps.Executions;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventMessage;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the global bus does with the events of a lost host ({@link GlobalBus}'s orphans): delivers
 * the ones nobody took, replays the taken ones with attempt + 1 (or fails their execution at
 * {@value Replayer#MAX_ATTEMPTS} attempts) — and first drops those whose execution has ended since
 * the event was made (decision 0045).
 *
 * <p>Why the end check: an instance's FINISHED flag is held until what it produced is acknowledged
 * (decisions 0011 and 0014), so a host that dies just after a grain's last result landed leaves
 * that grain unfinished on the bus although its execution ended. Replaying it runs the grain again
 * for nothing, and its second result overwrites the recorded end with a later one. The end must be
 * later than the event: a redrive runs new events of an ended execution before its record says
 * RUNNING again, and those are made after the old end.
 *
 * <p>Not thread-safe: the global bus thread owns it.
 */
final class LostWork {
  private static final Logger LOG = LoggerFactory.getLogger(LostWork.class);

  /** Puts an event on this host's local bus ({@code ahead}: before the queue's other work). */
  interface Delivery {
    void deliver(RedisLocalBus bus, EventMessage event, boolean ahead);
  }

  /** An orphan and the flags of its partition. */
  record Orphan(PartitionFlags flags, PartitionFlags.Unfinished unfinished) {
    EventMessage event() {
      return unfinished.event();
    }
  }

  private final String hostId;
  private final String incarnation;
  private final Delivery delivery;
  private final Function<Set<String>, Map<String, Instant>> ends;
  private final Executions executions;
  private final BiConsumer<String, String> note;
  final AtomicLong delivered = new AtomicLong();
  final AtomicLong replayed = new AtomicLong();
  final AtomicLong skipped = new AtomicLong();

  /**
   * @param ends the ends of the executions among the given ids that have ended (throws when it
   *     cannot tell: then everything is replayed, as without the check)
   * @param note notes a line in an app's log ({@code (app, line)})
   */
  LostWork(
      String hostId,
      String incarnation,
      Delivery delivery,
      Function<Set<String>, Map<String, Instant>> ends,
      Executions executions,
      BiConsumer<String, String> note) {
    this.hostId = hostId;
    this.incarnation = incarnation;
    this.delivery = delivery;
    this.ends = ends;
    this.executions = executions;
    this.note = note;
  }

  /** Takes over {@code orphans}, all of apps deployed here. */
  void takeOver(RedisLocalBus bus, List<Orphan> orphans) {
    Map<String, Instant> ended = endsOf(orphans);
    for (Orphan orphan : orphans) {
      Instant end = ended.get(orphan.event().getExecution_id());
      if (end != null && end.toEpochMilli() >= orphan.event().getCreated_ms()) {
        skip(orphan, end);
      } else if (orphan.unfinished().incarnation().isEmpty()) {
        deliverUntaken(bus, orphan);
      } else {
        replay(bus, orphan);
      }
    }
  }

  private Map<String, Instant> endsOf(List<Orphan> orphans) {
    Set<String> ids =
        orphans.stream().map(o -> o.event().getExecution_id()).collect(Collectors.toSet());
    try {
      return ends.apply(ids);
    } catch (RuntimeException e) {
      LOG.atWarn()
          .addKeyValue("executions", ids.size())
          .addKeyValue("error", e.toString())
          .log("could not read whether lost work has ended: replaying all of it");
      return Map.of();
    }
  }

  private void skip(Orphan orphan, Instant end) {
    orphan.flags().forget(orphan.unfinished().eventId());
    skipped.incrementAndGet();
    EventMessage event = orphan.event();
    // once per orphan, on recovery only: the fault tests count these beside the replays
    LOG.atInfo()
        .addKeyValue("execution_id", event.getExecution_id())
        .addKeyValue("app", event.getApp())
        .addKeyValue("grain", event.getTarget_grain())
        .addKeyValue("ended_at", end.toString())
        .log("skipped an event of a lost host: its execution has ended");
  }

  /** Delivered through Kafka and never taken: delivers it now, as a first attempt. */
  private void deliverUntaken(RedisLocalBus bus, Orphan orphan) {
    EventMessage event = orphan.event();
    delivery.deliver(bus, event, true);
    orphan.flags().adopt(orphan.unfinished().eventId(), incarnation, event);
    delivered.incrementAndGet();
    // once per orphan, on recovery only: the fault tests count these with the replays
    LOG.atInfo()
        .addKeyValue("execution_id", event.getExecution_id())
        .addKeyValue("app", event.getApp())
        .addKeyValue("grain", event.getTarget_grain())
        .log("delivered an event a lost host never took");
  }

  private void replay(RedisLocalBus bus, Orphan orphan) {
    EventMessage event = orphan.event();
    int attempt = event.getAttempt() + 1;
    if (attempt >= Replayer.MAX_ATTEMPTS) {
      String cause =
          "the host processing grain '"
              + event.getTarget_grain()
              + "' of this execution was lost "
              + Replayer.MAX_ATTEMPTS
              + " times";
      note.accept(event.getApp(), "execution " + event.getExecution_id() + " failed: " + cause);
      executions.fail(bus, event, Executions.RUNTIME_ERROR, cause);
      orphan.flags().forget(orphan.unfinished().eventId());
      return;
    }
    EventMessage again = event.deepCopy().setAttempt(attempt).setHost(hostId);
    delivery.deliver(bus, again, true);
    orphan.flags().adopt(orphan.unfinished().eventId(), incarnation, again);
    replayed.incrementAndGet();
    LOG.atInfo()
        .addKeyValue("execution_id", event.getExecution_id())
        .addKeyValue("app", event.getApp())
        .addKeyValue("grain", event.getTarget_grain())
        .addKeyValue("lost_incarnation", orphan.unfinished().incarnation())
        .addKeyValue("attempt", attempt + 1)
        .log("replayed an event of a lost host");
  }
}
