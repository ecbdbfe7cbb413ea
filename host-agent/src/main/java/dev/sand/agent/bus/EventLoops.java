package dev.sand.agent.bus;

import dev.sand.agent.apps.Deployer;
import dev.sand.agent.apps.Executions;
import dev.sand.bridge.kafka.KafkaBridge;
import dev.sand.bus.EventCodec;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.Keys;
import dev.sand.contracts.Topics;
import dev.sand.sandbox.SandboxExits;
import io.lettuce.core.Limit;
import io.lettuce.core.Range;
import io.lettuce.core.ScoredValue;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The host agent's three background loops over the local bus.
 *
 * <ul>
 *   <li><b>agent queue</b>: takes the copies grain instances and frontends push to {@code
 *       sand:agent:<host>}; tracks every event flagged PROCESSING until its FINISHED copy arrives
 *       (the in-flight table a dead sandbox's work is replayed from), and publishes each copy to
 *       its grain's topic on the global bus (Kafka, asynchronously, key = execution id, header =
 *       this incarnation) — off the grain-to-grain path. Final flags wait for the records before
 *       them ({@link FlagGate}); results go to {@code sand.results} ({@link ExecutionRecorder}).
 *       HISTORY messages go to {@code sand.history} ({@link ExecutionRecorder}) from a thread of
 *       their own, untracked: nothing waits for them, and they never delay a flag or a backup.
 *   <li><b>timers</b>: moves workflow timers (ASL Wait) that are due from {@code sand:timers} to
 *       the queue of the grain that set them; no process is held while a Wait runs. A timer that
 *       waits for a task token goes to {@link CallbackWaits} instead, which pushes it only with an
 *       outcome (decision 0033).
 *   <li><b>watchdog</b>: when a runtime signals that a sandbox stopped ({@link SandboxExits}), and
 *       at least every few seconds, restarts sandboxes that died ({@link Deployer#watch}) and
 *       re-queues the events their instances had taken (attempt + 1), or fails the execution
 *       ({@link Executions}) after {@value Replayer#MAX_ATTEMPTS} attempts, so no accepted
 *       invocation is lost silently.
 * </ul>
 *
 * <p>Each loop logs and keeps going on errors (Redis or Kafka away). Thread-safe.
 */
public final class EventLoops implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EventLoops.class);
  private static final Duration TAKE_TIMEOUT = Duration.ofSeconds(1);
  // ASL waits are whole seconds or timestamps; 25 ms of lateness is invisible there, while
  // polling faster costs the CPU that grain instances need on a small host.
  private static final long TIMER_TICK_MS = 25;
  private static final Duration TIMER_IDLE_WAIT = Duration.ofSeconds(1);
  // The watchdog wakes when a runtime says a sandbox stopped (SandboxExits); this slow look is
  // only the net under a missed signal.
  private static final Duration WATCH_SAFETY = Duration.ofSeconds(5);
  private static final Duration WATCH_SETTLE = Duration.ofMillis(300);
  private static final int DRAIN_BATCH = 256;
  // How long backups wait for the FINISHED flags that make them unnecessary (FlagGate): longer
  // than a chain of short grains on a busy host, far shorter than the time a host's death is
  // noticed in (seconds). Nothing waits for a backup but the flags of the events before it.
  private static final Duration BACKUP_WINDOW = Duration.ofMillis(100);
  // HISTORY messages waiting for the producer; beyond this many (a broker away for long) new ones
  // are dropped and counted: history is a record for people, the bus must not wait for it
  private static final int HISTORY_QUEUE = 10_000;

  private final String hostId;
  private final Supplier<RedisLocalBus> redis;
  private final Deployer deployer;
  private final SandboxExits exits;
  private final Replayer replayer;
  private final CallbackWaits callbacks;
  private final FlagGate gate;
  private final Map<String, EventMessage> inFlight = new ConcurrentHashMap<>();
  private final AtomicLong backedUp = new AtomicLong();
  private final AtomicLong backupErrors = new AtomicLong();
  private final AtomicLong backupsAcknowledged = new AtomicLong();
  private final AtomicLong watchdogRestarts = new AtomicLong();
  private volatile Consumer<EventMessage> onResult = event -> {};
  private final AtomicLong historyPublished = new AtomicLong();
  private final AtomicLong historyErrors = new AtomicLong();
  private final Supplier<KafkaBridge> kafka;
  private final String incarnation;
  private final java.util.concurrent.ThreadPoolExecutor historyPublisher =
      new java.util.concurrent.ThreadPoolExecutor(
          1,
          1,
          0,
          java.util.concurrent.TimeUnit.MILLISECONDS,
          new java.util.concurrent.ArrayBlockingQueue<>(HISTORY_QUEUE),
          r -> {
            Thread t = new Thread(r, "history-publisher");
            t.setDaemon(true);
            return t;
          },
          (task, pool) -> historyErrors.incrementAndGet());
  private final List<Thread> threads = new ArrayList<>();
  private volatile boolean running = true;

  /**
   * @param incarnation this run of the agent: the header of every record it publishes
   * @param callbacks fires the timers that wait for a task token (closed with these loops)
   */
  public EventLoops(
      String hostId,
      String incarnation,
      Supplier<RedisLocalBus> redis,
      Supplier<KafkaBridge> kafka,
      Deployer deployer,
      Executions executions,
      SandboxExits exits,
      CallbackWaits callbacks) {
    this.hostId = hostId;
    this.callbacks = callbacks;
    this.exits = exits;
    this.redis = redis;
    this.deployer = deployer;
    this.kafka = kafka;
    this.incarnation = incarnation;
    this.gate =
        new FlagGate(
            (record, onDone) -> {
              KafkaBridge bridge = kafka.get();
              if (bridge == null) {
                onDone.accept(new IllegalStateException("kafka not connected yet"));
                return;
              }
              bridge.publish(
                  record.topic(),
                  record.key(),
                  record.value(),
                  incarnation,
                  record.headers(),
                  error -> {
                    if (error == null) {
                      backupsAcknowledged.incrementAndGet();
                    }
                    if (error != null && backupErrors.incrementAndGet() % 100 == 1) {
                      LOG.atWarn()
                          .addKeyValue("topic", record.topic())
                          .addKeyValue("error", error.toString())
                          .log("backup to kafka failed; sending again");
                    }
                    onDone.accept(error);
                  });
            },
            BACKUP_WINDOW);
    this.replayer = new Replayer(hostId, inFlight, executions, deployer::note);
  }

  /** Starts the three loops (daemon threads). */
  public void start() {
    threads.add(new Thread(this::agentQueueLoop, "agent-queue"));
    threads.add(new Thread(this::timerLoop, "timers"));
    threads.add(new Thread(this::watchLoop, "watchdog"));
    threads.forEach(
        t -> {
          t.setDaemon(true);
          t.start();
        });
  }

  /** Counters for {@code /health} and metrics. */
  public Map<String, Long> counters() {
    return Map.of(
        "in_flight", (long) inFlight.size(),
        "backed_up", backedUp.get(),
        "backup_errors", backupErrors.get(),
        "backups_unacknowledged", (long) gate.waiting(),
        "backups_not_needed", gate.cancelled(),
        "replayed", replayer.replayed(),
        "backups_acknowledged", backupsAcknowledged.get(),
        "watchdog_restarts", watchdogRestarts.get(),
        "history_published", historyPublished.get(),
        "history_publish_errors", historyErrors.get());
  }

  /**
   * Calls {@code listener} with every RESULT/ERROR event this agent publishes, on the agent queue's
   * thread, after it was handed to the global bus (metrics, span export). It must not block.
   */
  public void onResult(Consumer<EventMessage> listener) {
    this.onResult = listener;
  }

  // -- agent queue -------------------------------------------------------------------------------

  private void agentQueueLoop() {
    RedisLocalBus.Taker taker = null;
    while (running) {
      try {
        RedisLocalBus bus = redis.get();
        if (bus == null) {
          sleep(200);
          continue;
        }
        if (taker == null) {
          taker = bus.taker();
        }
        Optional<byte[]> raw = taker.take(Keys.agent(hostId), TAKE_TIMEOUT);
        if (raw.isPresent()) {
          onAgentEvent(raw.get());
          // each invocation leaves several copies here: take what else is waiting in one call
          byte[] queue = Keys.agent(hostId).getBytes(StandardCharsets.UTF_8);
          List<byte[]> more = bus.call("RPOP", c -> c.rpop(queue, DRAIN_BATCH));
          if (more != null) {
            more.forEach(this::onAgentEvent);
          }
        }
      } catch (RuntimeException e) {
        LOG.atWarn().addKeyValue("error", e.toString()).log("agent queue loop error; retrying");
        if (taker != null) {
          taker.close();
          taker = null;
        }
        sleep(500);
      }
    }
    if (taker != null) {
      taker.close();
    }
  }

  void onAgentEvent(byte[] raw) {
    EventMessage event = EventCodec.decode(raw);
    if (event.getKind() == EventKind.HISTORY) {
      publishHistory(event.getExecution_id(), raw);
      return;
    }
    String grain = event.getTarget_grain();
    boolean result = event.getKind() == EventKind.RESULT || event.getKind() == EventKind.ERROR;
    String topic =
        result || grain == null || grain.isEmpty()
            ? Topics.RESULTS
            : Topics.grain(event.getApp(), grain);
    FlagGate.Outgoing record = new FlagGate.Outgoing(topic, event.getExecution_id(), raw);
    EventFlag flag = event.getFlag();
    Map<String, String> headers = event.isSetHeaders() ? event.getHeaders() : Map.of();
    if (!result && (flag == EventFlag.FINISHED || flag == EventFlag.FAILED)) {
      inFlight.remove(event.getEvent_id());
      gate.sendFinal(withDataHeader(record, event), event.getEvent_id(), produced(headers));
    } else if (!result && flag == EventFlag.PROCESSING) {
      // timers wait in sand:timers, which a dead sandbox does not lose: not in flight there
      if (event.getKind() != EventKind.TIMER) {
        inFlight.put(event.getEvent_id(), event);
      }
      if (headers.containsKey(Topics.BACKED_UP_HEADER)) {
        return; // a frontend published it before accepting the invocation
      }
      boolean origin = !headers.containsKey(Topics.REDELIVERED_HEADER);
      gate.sendBackup(record, event.getEvent_id(), origin);
    } else if (result) {
      gate.send(record);
      onResult.accept(event);
    } else {
      gate.sendNow(record); // QUEUED: a hop to another host, which waits for it
    }
    backedUp.incrementAndGet();
  }

  /**
   * Publishes a HISTORY message to {@code sand.history} (key: its execution) from the history
   * publisher's thread: no flag waits for it, it is not sent again, and a producer that blocks (a
   * broker away) holds up no backup. Dropped and counted when the publisher's queue is full.
   */
  private void publishHistory(String executionId, byte[] raw) {
    historyPublisher.execute(
        () -> {
          KafkaBridge bridge = kafka.get();
          if (bridge == null) {
            historyErrors.incrementAndGet();
            return;
          }
          bridge.publish(
              Topics.HISTORY,
              executionId,
              raw,
              incarnation,
              error -> {
                if (error == null) {
                  historyPublished.incrementAndGet();
                } else if (historyErrors.incrementAndGet() % 100 == 1) {
                  LOG.atWarn()
                      .addKeyValue("execution_id", executionId)
                      .addKeyValue("error", error.toString())
                      .log("history message not published to kafka; dropped");
                }
              });
        });
  }

  /** The number of products a FINISHED copy says its instance pushed before it, else -1. */
  private static int produced(Map<String, String> headers) {
    String count = headers.get(Topics.PRODUCED_HEADER);
    if (count == null) {
      return -1;
    }
    try {
      return Integer.parseInt(count);
    } catch (NumberFormatException e) {
      return -1; // waits for every earlier record: slower, never unsafe
    }
  }

  /**
   * The flag {@code record} with the global data its instance wrote (the event header {@link
   * Topics#DATA_HEADER}, set by the worker) moved into a record header of the same name, where
   * recovery reads it without decoding the event (decision 0012). Events without it go as they are.
   */
  static FlagGate.Outgoing withDataHeader(FlagGate.Outgoing record, EventMessage event) {
    if (!event.isSetHeaders() || !event.getHeaders().containsKey(Topics.DATA_HEADER)) {
      return record;
    }
    String written = event.getHeaders().remove(Topics.DATA_HEADER);
    if (event.getHeaders().isEmpty()) {
      event.unsetHeaders();
    }
    return new FlagGate.Outgoing(
        record.topic(),
        record.key(),
        EventCodec.encode(event),
        Map.of(Topics.DATA_HEADER, written.getBytes(StandardCharsets.UTF_8)));
  }

  // -- timers ------------------------------------------------------------------------------------

  private void timerLoop() {
    byte[] key = Keys.timers().getBytes(StandardCharsets.UTF_8);
    RedisLocalBus.Taker taker = null;
    while (running) {
      try {
        RedisLocalBus bus = redis.get();
        if (bus == null) {
          sleep(200);
          continue;
        }
        if (fireDue(bus, key)) {
          continue; // a full batch: more may be due
        }
        List<ScoredValue<byte[]>> next =
            bus.call("ZRANGE " + Keys.timers(), c -> c.zrangeWithScores(key, 0, 0));
        if (!next.isEmpty()) {
          long dueIn = (long) next.get(0).getScore() - System.currentTimeMillis();
          sleep(Math.max(1, Math.min(TIMER_TICK_MS, dueIn)));
          continue;
        }
        // Nothing is scheduled: wait for the first timer set (BZPOPMIN returns at its ZADD)
        // instead of asking every tick; an idle host then wakes once per TIMER_IDLE_WAIT.
        if (taker == null) {
          taker = bus.taker();
        }
        Optional<RedisLocalBus.Scored> first = taker.takeLowest(Keys.timers(), TIMER_IDLE_WAIT);
        if (first.isPresent()) {
          RedisLocalBus.Scored timer = first.get();
          if (timer.score() <= System.currentTimeMillis()) {
            fire(bus, timer.value());
          } else { // taken to learn that one was set: back in place until it is due
            bus.call("ZADD " + Keys.timers(), c -> c.zadd(key, timer.score(), timer.value()));
          }
        }
      } catch (RuntimeException e) {
        LOG.atWarn().addKeyValue("error", e.toString()).log("timer loop error; retrying");
        if (taker != null) {
          taker.close();
          taker = null;
        }
        sleep(TIMER_TICK_MS);
      }
    }
    if (taker != null) {
      taker.close();
    }
  }

  /** Moves up to 64 due timers to their grains' queues; true when there may be more due. */
  private boolean fireDue(RedisLocalBus bus, byte[] key) {
    long now = System.currentTimeMillis();
    List<byte[]> due =
        bus.call(
            "ZRANGEBYSCORE " + Keys.timers(),
            c ->
                c.zrangebyscore(
                    key, Range.create((double) Long.MIN_VALUE, (double) now), Limit.create(0, 64)));
    for (byte[] member : due) {
      // ZREM decides who owns a due timer, should two agents ever share a Redis
      long removed = bus.call("ZREM " + Keys.timers(), c -> c.zrem(key, member));
      if (removed == 1) {
        fire(bus, member);
      }
    }
    return due.size() == 64;
  }

  private void fire(RedisLocalBus bus, byte[] member) {
    EventMessage timer = EventCodec.decode(member);
    if (!deployer.isDeployed(timer.getApp())) {
      LOG.atInfo()
          .addKeyValue("execution_id", timer.getExecution_id())
          .addKeyValue("app", timer.getApp())
          .log("timer of an app no longer deployed dropped");
      return;
    }
    if (CallbackWaits.waitsForToken(timer)) {
      callbacks.fire(bus, member, timer); // Cassandra round trips: never on this thread
      return;
    }
    timer.setFlag(EventFlag.QUEUED);
    bus.push(Keys.grain(timer.getApp(), timer.getTarget_grain()), timer);
  }

  // -- watchdog and replay ----------------------------------------------------------------------

  private void watchLoop() {
    while (running) {
      try {
        if (exits.await(WATCH_SAFETY)) {
          // Look a moment after the signal, not at once: Docker announces a death before its
          // listing shows it, and a process sandbox restarted within milliseconds of its death
          // lost the execution it held in the full suite (2 runs of 2, cause not found; the
          // listing every 500 ms restarted 0-500 ms after a death and never did). Signals
          // that come meanwhile are covered by the same look.
          Thread.sleep(WATCH_SETTLE.toMillis());
          exits.await(Duration.ZERO);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      try {
        for (String app : deployer.watch()) {
          watchdogRestarts.incrementAndGet();
          replay(app);
        }
      } catch (RuntimeException e) {
        LOG.atWarn().addKeyValue("error", e.toString()).log("watchdog error");
      }
    }
  }

  /** Replays the events of {@code app} its dead sandbox's instances had taken. */
  void replay(String app) {
    RedisLocalBus bus = redis.get();
    if (bus != null) {
      replayer.replay(bus, app);
    }
  }

  @Override
  public void close() {
    running = false;
    exits.signal(); // the watchdog's wait ends now
    gate.close();
    historyPublisher.shutdown();
    for (Thread thread : threads) {
      try {
        thread.join(2000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    callbacks.close(); // after the timer loop: it hands no more firings over
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
