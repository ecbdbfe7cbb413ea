package dev.sand.agent.bus;

import dev.sand.bus.EventCodec;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.Keys;
import io.lettuce.core.Limit;
import io.lettuce.core.Range;
import io.lettuce.core.ScoredValue;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves workflow timers (ASL Wait) that are due from {@code sand:timers} to the queue of the grain
 * that set them; no process is held while a Wait runs. A timer that waits for a task token goes to
 * {@link CallbackWaits} instead, which pushes it only with an outcome (decision 0033). A timer of
 * an app no longer deployed is dropped. Runs on one thread until {@code running} turns false; logs
 * and keeps going on errors.
 */
final class TimerLoop implements Runnable {
  // the loops' name: the log lines they wrote before this class existed keep their logger
  private static final Logger LOG = LoggerFactory.getLogger(EventLoops.class);
  // ASL waits are whole seconds or timestamps; 25 ms of lateness is invisible there, while
  // polling faster costs the CPU that grain instances need on a small host.
  private static final long TICK_MS = 25;
  private static final Duration IDLE_WAIT = Duration.ofSeconds(1);
  private static final int BATCH = 64;

  private final Supplier<RedisLocalBus> redis;
  private final Predicate<String> deployed;
  private final CallbackWaits callbacks;
  private final BooleanSupplier running;

  /**
   * @param deployed whether an app is deployed here
   * @param running false once the loop must end
   */
  TimerLoop(
      Supplier<RedisLocalBus> redis,
      Predicate<String> deployed,
      CallbackWaits callbacks,
      BooleanSupplier running) {
    this.redis = redis;
    this.deployed = deployed;
    this.callbacks = callbacks;
    this.running = running;
  }

  @Override
  public void run() {
    byte[] key = Keys.timers().getBytes(StandardCharsets.UTF_8);
    RedisLocalBus.Taker taker = null;
    while (running.getAsBoolean()) {
      try {
        RedisLocalBus bus = redis.get();
        if (bus == null) {
          EventLoops.sleep(200);
          continue;
        }
        if (fireDue(bus, key)) {
          continue; // a full batch: more may be due
        }
        List<ScoredValue<byte[]>> next =
            bus.call("ZRANGE " + Keys.timers(), c -> c.zrangeWithScores(key, 0, 0));
        if (!next.isEmpty()) {
          long dueIn = (long) next.get(0).getScore() - System.currentTimeMillis();
          EventLoops.sleep(Math.max(1, Math.min(TICK_MS, dueIn)));
          continue;
        }
        // Nothing is scheduled: wait for the first timer set (BZPOPMIN returns at its ZADD)
        // instead of asking every tick; an idle host then wakes once per IDLE_WAIT.
        if (taker == null) {
          taker = bus.taker();
        }
        Optional<RedisLocalBus.Scored> first = taker.takeLowest(Keys.timers(), IDLE_WAIT);
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
        EventLoops.sleep(TICK_MS);
      }
    }
    if (taker != null) {
      taker.close();
    }
  }

  /** Moves up to {@link #BATCH} due timers to their grains' queues; true when more may be due. */
  private boolean fireDue(RedisLocalBus bus, byte[] key) {
    long now = System.currentTimeMillis();
    List<byte[]> due =
        bus.call(
            "ZRANGEBYSCORE " + Keys.timers(),
            c ->
                c.zrangebyscore(
                    key,
                    Range.create((double) Long.MIN_VALUE, (double) now),
                    Limit.create(0, BATCH)));
    for (byte[] member : due) {
      // ZREM decides who owns a due timer, should two agents ever share a Redis
      long removed = bus.call("ZREM " + Keys.timers(), c -> c.zrem(key, member));
      if (removed == 1) {
        fire(bus, member);
      }
    }
    return due.size() == BATCH;
  }

  private void fire(RedisLocalBus bus, byte[] member) {
    EventMessage timer = EventCodec.decode(member);
    if (!deployed.test(timer.getApp())) {
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
}
