package dev.sand.agent.bus;

import dev.sand.agent.apps.Executions;
import dev.sand.bus.EventCodec;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.Keys;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;

/**
 * Replays the events an app's instances had taken when its sandbox died: every event of the app in
 * the in-flight table (its PROCESSING copy arrived, its FINISHED copy did not) that is no longer in
 * a queue is pushed again with attempt + 1 — or, once it has been tried {@value #MAX_ATTEMPTS}
 * times, its execution fails ({@link Executions}), so no accepted invocation is lost silently.
 *
 * <p>Blocking (waits up to a second for the agent queue to drain, then a few Redis round trips per
 * event). Thread-safe as long as one app is replayed by one thread at a time.
 */
final class Replayer {
  static final int MAX_ATTEMPTS = 3;
  private static final long DRAIN_WAIT_MS = 1000;
  private static final long DRAIN_POLL_MS = 20;

  private final String hostId;
  private final Map<String, EventMessage> inFlight;
  private final Executions executions;
  private final BiConsumer<String, String> note;
  private final AtomicLong replayed = new AtomicLong();

  /**
   * @param hostId this host, whose agent queue must drain before replaying
   * @param inFlight the in-flight table by event id (concurrent; the agent-queue loop writes it)
   * @param note notes a line in an app's log ({@code (app, line)})
   */
  Replayer(
      String hostId,
      Map<String, EventMessage> inFlight,
      Executions executions,
      BiConsumer<String, String> note) {
    this.hostId = hostId;
    this.inFlight = inFlight;
    this.executions = executions;
    this.note = note;
  }

  /** How many events were pushed again since start. */
  long replayed() {
    return replayed.get();
  }

  /** Replays the in-flight events of {@code app} that are no longer in a queue. */
  void replay(RedisLocalBus bus, String app) {
    awaitDrained(bus);
    Set<String> queued = queuedEventIds(bus, app);
    for (EventMessage event : List.copyOf(inFlight.values())) {
      if (!app.equals(event.getApp()) || queued.contains(event.getEvent_id())) {
        continue;
      }
      if (event.getAttempt() + 1 >= MAX_ATTEMPTS) {
        inFlight.remove(event.getEvent_id());
        String cause =
            "the sandbox of app '"
                + app
                + "' died while grain '"
                + event.getTarget_grain()
                + "' handled this event, "
                + MAX_ATTEMPTS
                + " times";
        note.accept(app, "execution " + event.getExecution_id() + " failed: " + cause);
        executions.fail(bus, event, Executions.RUNTIME_ERROR, cause);
        continue;
      }
      EventMessage again =
          event.deepCopy().setFlag(EventFlag.QUEUED).setAttempt(event.getAttempt() + 1);
      inFlight.put(event.getEvent_id(), again.deepCopy().setFlag(EventFlag.PROCESSING));
      bus.push(Keys.grain(app, event.getTarget_grain()), again);
      replayed.incrementAndGet();
      note.accept(
          app,
          "re-queued event of execution "
              + event.getExecution_id()
              + " for grain '"
              + event.getTarget_grain()
              + "' (attempt "
              + (again.getAttempt() + 1)
              + ")");
    }
  }

  /** Lets the FINISHED copies that instances which did complete already pushed arrive first. */
  private void awaitDrained(RedisLocalBus bus) {
    byte[] queue = Keys.agent(hostId).getBytes(StandardCharsets.UTF_8);
    long deadline = System.currentTimeMillis() + DRAIN_WAIT_MS;
    while (System.currentTimeMillis() < deadline && bus.call("LLEN", c -> c.llen(queue)) > 0) {
      try {
        Thread.sleep(DRAIN_POLL_MS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** The ids of the events waiting in the queues of the grains {@code app} has in flight. */
  private Set<String> queuedEventIds(RedisLocalBus bus, String app) {
    Set<String> grains = new HashSet<>();
    inFlight.values().stream()
        .filter(e -> app.equals(e.getApp()))
        .forEach(e -> grains.add(e.getTarget_grain()));
    Set<String> queued = new HashSet<>();
    for (String grain : grains) {
      byte[] queue = Keys.grain(app, grain).getBytes(StandardCharsets.UTF_8);
      for (byte[] raw : bus.call("LRANGE " + Keys.grain(app, grain), c -> c.lrange(queue, 0, -1))) {
        try {
          queued.add(EventCodec.decode(raw).getEvent_id());
        } catch (RuntimeException e) {
          // an unreadable entry is no event of ours to match
        }
      }
    }
    return queued;
  }
}
