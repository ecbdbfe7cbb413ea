package dev.sand.agent.bus;

import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.Keys;
import dev.sand.contracts.TaskOutcomes;
import dev.sand.contracts.TaskToken;
import dev.sand.contracts.TaskTokens;
import dev.sand.contracts.contractsConstants;
import dev.sand.store.TaskWait;
import dev.sand.store.TaskWaitRegistration;
import dev.sand.store.cassandra.CassandraStore;
import dev.sand.store.cassandra.TaskWaits;
import io.lettuce.core.ZAddArgs;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fires the timers that wait for a task token (decision 0033, step 3): a due TIMER with header
 * {@code HEADER_CALLBACK} is registered in {@code task_waits}, then pushed to its grain only with
 * an outcome (a callback's or a timeout's), else put back in {@code sand:timers} until its deadline
 * ({@link CallbackDecision} decides which).
 *
 * <p>Why a thread of its own: each firing makes several Cassandra round trips (lightweight
 * transactions), and the timer loop, which every ASL Wait of the host goes through, must never wait
 * for Cassandra. Firings queue here (bounded); when the queue is full, or Cassandra or the check of
 * the token fails in a way a retry may cure, the timer goes back to {@code sand:timers} a second
 * later, so a taken timer is never dropped silently. A header that can never work (malformed, a
 * token not of this timer's app and execution) ends the task with {@code States.Runtime}, so the
 * execution ends explained instead of waiting forever. Thread-safe.
 */
public final class CallbackWaits implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CallbackWaits.class);
  private static final int QUEUE = 10_000;
  // a timeout that lost to a callback or a heartbeat reads the row again, at most this often
  private static final int STEPS = 5;
  private static final byte[] TIMERS = Keys.timers().getBytes(StandardCharsets.UTF_8);

  private final String hostId;
  private final String secret;
  private final Supplier<RedisLocalBus> redis;
  private final Supplier<CassandraStore> cassandra;
  private final Clock clock;
  private final ThreadPoolExecutor worker;

  /**
   * @param secret {@code host_agent.secret}, which each app's token key derives from
   */
  public CallbackWaits(
      String hostId,
      String secret,
      Supplier<RedisLocalBus> redis,
      Supplier<CassandraStore> cassandra,
      Clock clock) {
    this.hostId = hostId;
    this.secret = secret;
    this.redis = redis;
    this.cassandra = cassandra;
    this.clock = clock;
    this.worker =
        new ThreadPoolExecutor(
            1,
            1,
            0,
            TimeUnit.MILLISECONDS,
            new ArrayBlockingQueue<>(QUEUE),
            r -> {
              Thread t = new Thread(r, "callback-waits");
              t.setDaemon(true);
              return t;
            },
            new ThreadPoolExecutor.AbortPolicy());
  }

  /** Whether {@code timer} waits for a task token (it carries {@code HEADER_CALLBACK}). */
  static boolean waitsForToken(EventMessage timer) {
    return timer.isSetHeaders()
        && timer.getHeaders().containsKey(contractsConstants.HEADER_CALLBACK);
  }

  /**
   * Queues the firing of {@code timer}, taken from {@code sand:timers} as {@code member}; returns
   * at once (the timer loop's thread). When the queue is full the timer goes back for a second.
   */
  void fire(RedisLocalBus bus, byte[] member, EventMessage timer) {
    try {
      worker.execute(new Firing(member, timer));
    } catch (java.util.concurrent.RejectedExecutionException e) {
      later(bus, member, "callback firings queue full");
    }
  }

  /** One queued firing; a class of its own so that {@link #close} can put back what never ran. */
  private final class Firing implements Runnable {
    private final byte[] member;
    private final EventMessage timer;

    Firing(byte[] member, EventMessage timer) {
      this.member = member;
      this.timer = timer;
    }

    @Override
    public void run() {
      fireNow(member, timer);
    }
  }

  private void fireNow(byte[] member, EventMessage timer) {
    RedisLocalBus bus = redis.get();
    if (bus == null) {
      LOG.atWarn()
          .addKeyValue("execution_id", timer.getExecution_id())
          .log("callback timer taken while redis is away; lost");
      return;
    }
    CallbackHeader header;
    try {
      header = CallbackHeader.parse(timer.getHeaders().get(contractsConstants.HEADER_CALLBACK));
      check(TaskTokens.verify(header.token(), secret), timer);
    } catch (IllegalArgumentException e) {
      LOG.atWarn()
          .addKeyValue("execution_id", timer.getExecution_id())
          .addKeyValue("app", timer.getApp())
          .addKeyValue("error", e.getMessage())
          .log("callback timer cannot wait; its task fails");
      push(
          bus,
          timer,
          TaskOutcomes.failed(
                  TaskOutcomes.RUNTIME, "cannot wait for the task token: " + e.getMessage())
              .toString());
      return;
    }
    try {
      CassandraStore store = cassandra.get();
      if (store == null) {
        later(bus, member, "cassandra not connected yet");
        return;
      }
      steps(store.taskWaits(), bus, member, timer, header);
    } catch (RuntimeException e) {
      later(bus, member, e.toString());
    }
  }

  /** Steps 3a–3d for one timer. */
  private void steps(
      TaskWaits waits,
      RedisLocalBus bus,
      byte[] member,
      EventMessage timer,
      CallbackHeader header) {
    String hash = TaskTokens.hash(header.token());
    waits.register(
        new TaskWaitRegistration(
            hash,
            timer.getApp(),
            timer.getExecution_id(),
            header.timeoutAt(),
            header.heartbeatMs(),
            hostId,
            member),
        clock.millis());
    for (int step = 0; step < STEPS; step++) {
      long now = clock.millis();
      Optional<TaskWait> row = waits.read(hash);
      CallbackDecision.Step next = CallbackDecision.next(row, now);
      if (next instanceof CallbackDecision.Push push) {
        push(bus, timer, push.outcome());
        return;
      }
      if (next instanceof CallbackDecision.TimeOut timeOut) {
        if (waits.timeOut(row.orElseThrow(), timeOut.outcome(), now)) {
          push(bus, timer, timeOut.outcome());
          return;
        }
        continue; // a callback or a heartbeat came first: read again
      }
      long at = ((CallbackDecision.Schedule) next).atMs();
      bus.call("ZADD " + Keys.timers(), c -> c.zadd(TIMERS, (double) at, member));
      // a callback between the read and the ZADD nudged nothing (the member was not there): look
      if (waits.read(hash).map(w -> w.status().ended()).orElse(false)) {
        long soon = clock.millis();
        bus.call(
            "ZADD XX " + Keys.timers(), c -> c.zadd(TIMERS, ZAddArgs.Builder.xx(), soon, member));
      }
      return;
    }
    later(bus, member, "the wait changed under " + STEPS + " reads");
  }

  /**
   * Refuses a token that is not this timer's: a sandbox can mint tokens of its own app only, but
   * could copy another execution's into a header.
   */
  private static void check(TaskToken token, EventMessage timer) {
    if (!token.app().equals(timer.getApp())
        || !token.executionId().equals(timer.getExecution_id())) {
      throw new IllegalArgumentException(
          "the task token names execution '"
              + token.executionId()
              + "' of app '"
              + token.app()
              + "', not this timer's");
    }
  }

  /** Step 3b: the timer goes to its grain (QUEUED) with the wait's outcome. */
  private static void push(RedisLocalBus bus, EventMessage timer, String outcome) {
    timer.setFlag(EventFlag.QUEUED);
    timer.getHeaders().put(contractsConstants.HEADER_CALLBACK_OUTCOME, outcome);
    bus.push(Keys.grain(timer.getApp(), timer.getTarget_grain()), timer);
  }

  /** Puts {@code member} back in {@code sand:timers} a moment from now: its firing failed. */
  private void later(RedisLocalBus bus, byte[] member, String why) {
    long at = clock.millis() + CallbackDecision.RETRY_MS;
    try {
      bus.call("ZADD " + Keys.timers(), c -> c.zadd(TIMERS, (double) at, member));
      LOG.atWarn().addKeyValue("error", why).log("callback timer fires again in a second");
    } catch (RuntimeException e) {
      LOG.atError()
          .addKeyValue("error", why)
          .addKeyValue("redis_error", e.toString())
          .log("callback timer could not be put back; its wait is lost");
    }
  }

  /**
   * Stops the thread; the timers of firings still queued go back to {@code sand:timers}, due now,
   * for the next agent to fire.
   */
  @Override
  public void close() {
    RedisLocalBus bus = redis.get();
    for (Runnable queued : worker.shutdownNow()) {
      if (bus != null && queued instanceof Firing firing) {
        long now = clock.millis();
        try {
          bus.call("ZADD " + Keys.timers(), c -> c.zadd(TIMERS, (double) now, firing.member));
        } catch (RuntimeException e) {
          LOG.atWarn().addKeyValue("error", e.toString()).log("callback timer not put back");
        }
      }
    }
    try {
      worker.awaitTermination(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
