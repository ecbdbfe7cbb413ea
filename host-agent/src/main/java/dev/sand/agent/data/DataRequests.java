package dev.sand.agent.data;

import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.redis.TakerSlot;
import dev.sand.contracts.DataReply;
import dev.sand.contracts.DataRequest;
import dev.sand.contracts.Keys;
import dev.sand.contracts.Names;
import dev.sand.contracts.contractsConstants;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the global data layer to the grains of this host (decision 0012). Grains have no route to
 * Cassandra and no credentials for it; each pushes a {@link DataRequest} to its app's request list
 * ({@link Keys#dataRequests}), which the app's Redis ACL user alone may write, and waits on the
 * reply list the request names ({@link Keys#dataReply}), which only that app may read. So the queue
 * a request was taken from names its app: the request itself has no say.
 *
 * <p>One thread takes requests from the lists of every app deployed here (one BRPOP over all of
 * them) and hands each to {@link GlobalData} without waiting; replies are pushed from a thread of
 * their own (never from the Cassandra driver's I/O threads). A request whose deadline passed while
 * it queued (the agent was away) is dropped unanswered and not carried out: its grain was already
 * told it timed out. Logs and keeps going on errors. Thread-safe.
 */
public final class DataRequests implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(DataRequests.class);
  // A newly deployed app's list joins the BRPOP after at most this long; requests wait meanwhile.
  private static final Duration TAKE_TIMEOUT = Duration.ofMillis(500);
  private static final long REPLY_TTL_S = contractsConstants.GDATA_REPLY_TTL_S;

  private final Supplier<RedisLocalBus> redis;
  private final Supplier<Set<String>> apps;
  private final GlobalData data;
  private final Clock clock;
  private final ExecutorService replies =
      Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "gdata-replies");
            t.setDaemon(true);
            return t;
          });
  private final AtomicLong served = new AtomicLong();
  private final AtomicLong dropped = new AtomicLong();
  private volatile Thread thread;
  private volatile boolean running = true;

  /**
   * @param apps the applications deployed on this host (their request lists are served)
   */
  public DataRequests(
      Supplier<RedisLocalBus> redis, Supplier<Set<String>> apps, GlobalData data, Clock clock) {
    this.redis = redis;
    this.apps = apps;
    this.data = data;
    this.clock = clock;
  }

  /** Starts the taking thread (a daemon). */
  public void start() {
    Thread t = new Thread(this::takeLoop, "gdata-requests");
    t.setDaemon(true);
    t.start();
    thread = t;
  }

  /** Requests answered, and requests dropped (malformed, or their deadline had passed). */
  public Map<String, Long> counters() {
    return Map.of("gdata_served", served.get(), "gdata_dropped", dropped.get());
  }

  private void takeLoop() {
    TakerSlot taker = new TakerSlot();
    while (running) {
      try {
        RedisLocalBus bus = redis.get();
        Map<String, String> appByQueue = new HashMap<>();
        for (String app : apps.get()) {
          appByQueue.put(Keys.dataRequests(app), app);
        }
        if (bus == null || appByQueue.isEmpty()) {
          sleep(TAKE_TIMEOUT.toMillis());
          continue;
        }
        Optional<RedisLocalBus.Taken> taken =
            taker.on(bus).takeAny(new ArrayList<>(appByQueue.keySet()), TAKE_TIMEOUT);
        if (taken.isPresent()) {
          onRequest(appByQueue.get(taken.get().queue()), taken.get().value());
        }
      } catch (RuntimeException e) {
        LOG.atWarn().addKeyValue("error", e.toString()).log("data request loop error; retrying");
        taker.close();
        sleep(500);
      }
    }
    taker.close();
  }

  /** Handles one request of {@code app} (the app whose list it came from). */
  void onRequest(String app, byte[] raw) {
    DataRequest request;
    try {
      request = DataCodec.decodeRequest(raw);
      Names.requireDataRequest(request.getRequest_id());
    } catch (IllegalArgumentException e) {
      // no usable request id: nobody to answer
      dropped.incrementAndGet();
      LOG.atWarn()
          .addKeyValue("app", app)
          .addKeyValue("error", e.getMessage())
          .log("malformed data request dropped");
      return;
    }
    if (request.getDeadline_ms() < clock.millis()) {
      dropped.incrementAndGet();
      LOG.atInfo()
          .addKeyValue("app", app)
          .addKeyValue("op", String.valueOf(request.getOp()))
          .addKeyValue("key", request.getKey())
          .log("data request past its deadline dropped");
      return;
    }
    data.serve(app, request)
        .thenAccept(
            reply -> {
              try {
                replies.execute(() -> reply(app, request, reply));
              } catch (RejectedExecutionException e) {
                // closing: the grain times out
              }
            });
  }

  private void reply(String app, DataRequest request, DataReply reply) {
    String key = Keys.dataReply(app, request.getRequest_id());
    byte[] name = key.getBytes(StandardCharsets.UTF_8);
    byte[] encoded = DataCodec.encodeReply(reply);
    try {
      RedisLocalBus bus = redis.get();
      if (bus == null) {
        throw new IllegalStateException("redis not connected");
      }
      // the expiry clears replies whose grain stopped waiting
      bus.call(
          "LPUSH " + key,
          c -> {
            c.lpush(name, encoded);
            return c.expire(name, REPLY_TTL_S);
          });
      served.incrementAndGet();
      if (!reply.isOk()) {
        LOG.atInfo()
            .addKeyValue("app", app)
            .addKeyValue("op", String.valueOf(request.getOp()))
            .addKeyValue("key", request.getKey())
            .addKeyValue("error", reply.getError())
            .log("data request refused or failed");
      }
    } catch (RuntimeException e) {
      LOG.atWarn()
          .addKeyValue("app", app)
          .addKeyValue("error", e.toString())
          .log("data reply not delivered; the grain times out");
    }
  }

  @Override
  public void close() {
    running = false;
    replies.shutdown();
    Thread t = thread;
    if (t != null) {
      try {
        t.join(2000);
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
