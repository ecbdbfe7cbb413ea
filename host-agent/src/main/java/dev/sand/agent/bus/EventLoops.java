package dev.sand.agent.bus;

import dev.sand.agent.apps.Deployer;
import dev.sand.agent.apps.Executions;
import dev.sand.bridge.kafka.KafkaBridge;
import dev.sand.bus.EventCodec;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.Keys;
import dev.sand.contracts.ResultDocument;
import dev.sand.contracts.Topics;
import dev.sand.store.ExecutionRecord;
import dev.sand.store.cassandra.CassandraStore;
import io.lettuce.core.Limit;
import io.lettuce.core.Range;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The host agent's three background loops over the local bus.
 *
 * <ul>
 *   <li><b>agent queue</b>: takes the copies grain instances and frontends push to {@code
 *       sand:agent:<host>}; tracks every event flagged PROCESSING until its FINISHED copy arrives
 *       (the in-flight table recovery replays from), and publishes each copy to the global bus
 *       (Kafka, asynchronously, key = execution id) — off the grain-to-grain path.
 *   <li><b>timers</b>: moves workflow timers (ASL Wait) that are due from {@code sand:timers} to
 *       the queue of the grain that set them; no process is held while a Wait runs.
 *   <li><b>watchdog</b>: restarts sandboxes that died ({@link Deployer#watch}) and re-queues the
 *       events their instances had taken (attempt + 1), or fails the execution ({@link Executions})
 *       after {@value Replayer#MAX_ATTEMPTS} attempts, so no accepted invocation is lost silently.
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
  private static final long WATCH_TICK_MS = 500;
  private static final int DRAIN_BATCH = 256;
  // Execution records go to Cassandra in batches gathered over this long (or this many):
  // Cassandra's CPU is per request more than per row, and a record is off every path.
  private static final long RECORD_FLUSH_MS = 250;
  private static final int RECORD_BATCH = 128;

  private final String hostId;
  private final Supplier<RedisLocalBus> redis;
  private final Supplier<KafkaBridge> kafka;
  private final Supplier<CassandraStore> cassandra;
  private final Deployer deployer;
  private final Replayer replayer;
  private final Map<String, EventMessage> inFlight = new ConcurrentHashMap<>();
  private final AtomicLong backedUp = new AtomicLong();
  private final AtomicLong backupErrors = new AtomicLong();
  private final AtomicLong recorded = new AtomicLong();
  private final AtomicLong recordErrors = new AtomicLong();
  // touched by the agent-queue thread only
  private final List<ExecutionRecord> pendingRecords = new ArrayList<>();
  private long lastFlushMs;
  private final List<Thread> threads = new ArrayList<>();
  private volatile boolean running = true;

  public EventLoops(
      String hostId,
      Supplier<RedisLocalBus> redis,
      Supplier<KafkaBridge> kafka,
      Supplier<CassandraStore> cassandra,
      Deployer deployer,
      Executions executions) {
    this.hostId = hostId;
    this.redis = redis;
    this.kafka = kafka;
    this.cassandra = cassandra;
    this.deployer = deployer;
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
        "replayed", replayer.replayed(),
        "recorded", recorded.get(),
        "record_errors", recordErrors.get());
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
        Duration wait =
            pendingRecords.isEmpty() ? TAKE_TIMEOUT : Duration.ofMillis(RECORD_FLUSH_MS);
        Optional<byte[]> raw = taker.take(Keys.agent(hostId), wait);
        if (raw.isEmpty()) {
          flushRecords(true);
        } else {
          onAgentEvent(raw.get());
          // each invocation leaves several copies here: take what else is waiting in one call
          byte[] queue = Keys.agent(hostId).getBytes(StandardCharsets.UTF_8);
          List<byte[]> more = bus.call("RPOP", c -> c.rpop(queue, DRAIN_BATCH));
          if (more != null) {
            more.forEach(this::onAgentEvent);
          }
          flushRecords(false);
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
    flushRecords(true); // nothing gathered is left behind at shutdown
    if (taker != null) {
      taker.close();
    }
  }

  void onAgentEvent(byte[] raw) {
    EventMessage event = EventCodec.decode(raw);
    String topic;
    if (event.getKind() == EventKind.RESULT || event.getKind() == EventKind.ERROR) {
      topic = Topics.RESULTS;
      record(event);
    } else if (event.getFlag() == EventFlag.QUEUED) {
      // an event for a grain that runs on another host: deliver it through its topic
      topic = Topics.grain(event.getApp(), event.getTarget_grain());
    } else {
      if (event.getFlag() == EventFlag.PROCESSING) {
        inFlight.put(event.getEvent_id(), event);
      } else if (event.getFlag() == EventFlag.FINISHED || event.getFlag() == EventFlag.FAILED) {
        inFlight.remove(event.getEvent_id());
      }
      topic =
          event.getTarget_grain() == null || event.getTarget_grain().isEmpty()
              ? Topics.RESULTS
              : Topics.backup(event.getApp(), event.getTarget_grain());
    }
    KafkaBridge bridge = kafka.get();
    if (bridge == null) {
      backupErrors.incrementAndGet();
      return;
    }
    bridge.publish(
        topic,
        event.getExecution_id(),
        raw,
        error -> {
          if (backupErrors.incrementAndGet() % 100 == 1) {
            LOG.atWarn()
                .addKeyValue("topic", topic)
                .addKeyValue("execution_id", event.getExecution_id())
                .addKeyValue("error", error.toString())
                .log("backup to kafka failed");
          }
        });
    backedUp.incrementAndGet();
  }

  /**
   * Keeps the final result in the global data layer (Redis holds it for {@link
   * ResultDocument#TTL}). Records are written in batches, after each drain of the agent queue.
   */
  private void record(EventMessage event) {
    ResultDocument doc = null;
    try {
      doc = ResultDocument.parse(event.getPayload());
    } catch (RuntimeException e) {
      // not a result document: recorded from the event's own fields
    }
    boolean ok = event.getKind() == EventKind.RESULT;
    String output = doc == null || doc.output() == null ? "" : doc.output().toString();
    pendingRecords.add(
        new ExecutionRecord(
            event.getExecution_id(),
            event.getApp(),
            event.getWorkflow(),
            ok ? ExecutionStatus.SUCCEEDED : ExecutionStatus.FAILED,
            ok ? output : null,
            ok ? null : doc == null || doc.error() == null ? event.getError() : doc.error(),
            ok ? null : doc == null || doc.cause() == null ? event.getCause() : doc.cause(),
            Instant.ofEpochMilli(event.getCreated_ms())));
  }

  private void flushRecords(boolean now) {
    if (pendingRecords.isEmpty()) {
      return;
    }
    long nowMs = System.nanoTime() / 1_000_000;
    if (!now && pendingRecords.size() < RECORD_BATCH && nowMs - lastFlushMs < RECORD_FLUSH_MS) {
      return;
    }
    lastFlushMs = nowMs;
    List<ExecutionRecord> batch = List.copyOf(pendingRecords);
    pendingRecords.clear();
    CassandraStore store = cassandra.get();
    if (store == null) {
      recordErrors.addAndGet(batch.size());
      return;
    }
    store.recordExecutions(
        batch,
        error -> {
          if (recordErrors.getAndAdd(batch.size()) % 100 == 0) {
            LOG.atWarn()
                .addKeyValue("records", batch.size())
                .addKeyValue("error", error.toString())
                .log("execution records not stored in cassandra");
          }
        });
    recorded.addAndGet(batch.size());
  }

  // -- timers ------------------------------------------------------------------------------------

  private void timerLoop() {
    byte[] key = Keys.timers().getBytes(StandardCharsets.UTF_8);
    while (running) {
      try {
        RedisLocalBus bus = redis.get();
        if (bus != null) {
          long now = System.currentTimeMillis();
          List<byte[]> due =
              bus.call(
                  "ZRANGEBYSCORE " + Keys.timers(),
                  c ->
                      c.zrangebyscore(
                          key,
                          Range.create((double) Long.MIN_VALUE, (double) now),
                          Limit.create(0, 64)));
          for (byte[] member : due) {
            // ZREM decides who owns a due timer, should two agents ever share a Redis
            long removed = bus.call("ZREM " + Keys.timers(), c -> c.zrem(key, member));
            if (removed == 1) {
              fire(bus, member);
            }
          }
          if (due.size() == 64) {
            continue;
          }
        }
      } catch (RuntimeException e) {
        LOG.atWarn().addKeyValue("error", e.toString()).log("timer loop error; retrying");
      }
      sleep(TIMER_TICK_MS);
    }
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
    timer.setFlag(EventFlag.QUEUED);
    bus.push(Keys.grain(timer.getApp(), timer.getTarget_grain()), timer);
  }

  // -- watchdog and replay ----------------------------------------------------------------------

  private void watchLoop() {
    while (running) {
      sleep(WATCH_TICK_MS);
      try {
        for (String app : deployer.watch()) {
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
    for (Thread thread : threads) {
      try {
        thread.join(2000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
