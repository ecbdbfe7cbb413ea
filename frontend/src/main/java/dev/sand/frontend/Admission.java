package dev.sand.frontend;

import com.netflix.concurrency.limits.Limit;
import com.netflix.concurrency.limits.limit.VegasLimit;
import dev.sand.config.AdmissionConfig;
import dev.sand.contracts.Keys;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Admission control (decision 0023): how many more events of an application one host may take
 * before its invocations are refused with 429 and {@code Retry-After}.
 *
 * <p>What is counted is the app's work on the host's Redis: the events waiting in its grain queues
 * ({@code sand:q:<app>:*}, exact) and the instances its grain workers report running ({@code
 * in_flight} of {@code sand:metrics:<app>:<grain>}, refreshed every few seconds, counted while the
 * worker's readiness key exists). Waiting events alone are not enough: a worker keeps instances
 * forked ahead, so an event is taken at once and its queue stays short while up to {@code
 * max_concurrency} instances share the CPU. {@link Invoker} reads these inside the script that
 * queues the invocation (the same round trip), compares them with the {@link Quota} given here and
 * writes nothing when the app is at its bound: the check costs a few O(1) commands in Redis and no
 * round trip. Both bounds are soft by the invocations admitted at the same moment.
 *
 * <p>The per-app bound is exact (every call reads its app's queues). The per-host bound adds, to
 * the app's fresh count, what this frontend saw of the host's other apps in the last {@link
 * #FRESH_MS} ms (each call of an app reports its count): a busy app is seen at every call; an app
 * nobody calls drains and is forgotten. One {@link HostBacklog} per host. Thread-safe.
 *
 * <p>With {@code admission.adaptive} (decision 0032) the per-app bound is also the app's limit on
 * that host: a {@link VegasLimit} (Netflix concurrency-limits) fed with the latency of each of the
 * app's synchronous calls there, as {@link Invoker} reports them ({@link HostBacklog#answered}).
 * While calls take longer than the least latency seen (work waits behind work: a queue on the CPU,
 * not only in Redis) the limit shrinks; when they do not it grows back to {@code
 * max_queued_per_app}. A grain that waits rather than computes keeps its latency, so it keeps the
 * whole bound; an app called only asynchronously gives no samples and keeps it too.
 */
final class Admission {
  /** How long an app's backlog, seen at its last call, counts against the host's bound. */
  static final long FRESH_MS = 250;

  private static final long FRESH_NANOS = FRESH_MS * 1_000_000;

  private final AdmissionConfig config;
  private final LongSupplier nanoTime;

  /**
   * @param nanoTime the ticker ({@code System::nanoTime}; tests inject their own)
   */
  Admission(AdmissionConfig config, LongSupplier nanoTime) {
    this.config = config;
    this.nanoTime = nanoTime;
  }

  /** The configured bounds. */
  AdmissionConfig config() {
    return config;
  }

  /** A new, empty view of one host's backlog. */
  HostBacklog host(String hostId) {
    return new HostBacklog(hostId);
  }

  /**
   * What the script is told about one invocation: what to count and the most it may find for the
   * invocation to be queued.
   *
   * @param queues per grain of the app on the host, three Redis keys (UTF-8): its queue (counted by
   *     {@code LLEN}), its worker's readiness key and its metrics hash (whose {@code in_flight} is
   *     counted while the readiness key exists)
   * @param limit the invocation is queued only while the count is below this
   */
  record Quota(byte[][] queues, long limit) {}

  /**
   * A refused invocation: the host is at one of its bounds. Nothing was queued or backed up.
   * Carries the answer: the message names the app, the host, the count and the bound.
   */
  static final class Busy extends Exception {
    private static final long serialVersionUID = 1L;
    final int retryAfterS;

    Busy(String message, int retryAfterS) {
      super(message, null, false, false);
      this.retryAfterS = retryAfterS;
    }

    /** The 429 body: {@code {"error": message, "retry_after_s": N}}. */
    Map<String, Object> body() {
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("error", getMessage());
      body.put("retry_after_s", retryAfterS);
      return body;
    }
  }

  /** What one frontend saw of one host's backlog, by application. Thread-safe. */
  final class HostBacklog {
    private record Seen(long queued, long atNanos) {}

    private final String hostId;
    private final ConcurrentHashMap<String, Seen> seen = new ConcurrentHashMap<>();
    // per app: the limit its calls' latency sets (admission.adaptive)
    private final ConcurrentHashMap<String, Limit> limits = new ConcurrentHashMap<>();
    // asynchronous invocations admitted and waiting for their backup's ack, by app
    private final ConcurrentHashMap<String, java.util.concurrent.atomic.AtomicLong> pending =
        new ConcurrentHashMap<>();
    // the app's queue keys, by the grains the host runs (kept while the set is the same)
    private final ConcurrentHashMap<String, Map.Entry<Set<String>, byte[][]>> keys =
        new ConcurrentHashMap<>();

    private HostBacklog(String hostId) {
      this.hostId = hostId;
    }

    /**
     * The quota of one invocation of {@code app}, whose grains on this host are {@code grains}: the
     * app's own bound, or less when the host's other apps leave less room.
     */
    Quota quota(String app, Set<String> grains) {
      long room = config.maxQueuedPerHost() - others(app);
      return new Quota(queues(app, grains), Math.min(appBound(app), room));
    }

    /** The ticker's now: when a call {@link #answered} later started. */
    long now() {
      return nanoTime.getAsLong();
    }

    /** The most events of {@code app} this host takes now: its latency's limit, if adaptive. */
    long appBound(String app) {
      if (!config.adaptive()) {
        return config.maxQueuedPerApp();
      }
      return Math.min(config.maxQueuedPerApp(), limit(app).getLimit());
    }

    /**
     * A synchronous call of {@code app} admitted here at {@code startNanos} was answered: with its
     * result ({@code inTime}), or 202 when its wait ran out (a drop: the limit shrinks).
     */
    void answered(String app, long startNanos, boolean inTime) {
      if (!config.adaptive()) {
        return;
      }
      long rtt = nanoTime.getAsLong() - startNanos;
      if (rtt <= 0) {
        return;
      }
      Seen s = seen.get(app);
      int inflight = s == null ? 1 : (int) Math.max(1, s.queued());
      limit(app).onSample(startNanos, rtt, inflight, !inTime);
    }

    private Limit limit(String app) {
      // From the whole bound (what a fresh app may take), at most it; never below one event.
      return limits.computeIfAbsent(
          app,
          a ->
              VegasLimit.newBuilder()
                  .initialLimit(config.maxQueuedPerApp())
                  .maxConcurrency(config.maxQueuedPerApp())
                  // halve on congestion (Vegas's own step, log10 of the limit, takes tens of
                  // samples from 32 to a few: the overload's first seconds were all queue)
                  .decreaseFunction(limit -> limit / 2)
                  .build());
    }

    /** How many invocations of {@code app} this frontend admitted here and has not queued yet. */
    long pending(String app) {
      java.util.concurrent.atomic.AtomicLong count = pending.get(app);
      return count == null ? 0 : count.get();
    }

    /** Adds {@code delta} to {@link #pending(String)}. */
    void pending(String app, long delta) {
      pending
          .computeIfAbsent(app, a -> new java.util.concurrent.atomic.AtomicLong())
          .addAndGet(delta);
    }

    /**
     * Records that {@code app} had {@code queued} events waiting or running here, as a call just
     * read. Capped at the per-app bound: the count comes from keys the app's own grains may write,
     * and must not let one app take the host's room from the others.
     */
    void saw(String app, long queued) {
      if (queued <= 0) {
        seen.remove(app);
      } else {
        seen.put(app, new Seen(Math.min(queued, config.maxQueuedPerApp()), nanoTime.getAsLong()));
      }
    }

    /**
     * The refusal of an invocation of {@code app} that found {@code queued} events waiting against
     * {@code quota}; records the count.
     */
    Busy busy(String app, Quota quota, long queued) {
      saw(app, queued);
      long bound = appBound(app);
      String why =
          queued >= config.maxQueuedPerApp()
              ? "' is at its bound on host '"
                  + hostId
                  + "': "
                  + queued
                  + " of its events wait or run, at most "
                  + config.maxQueuedPerApp()
                  + " per application (admission.max_queued_per_app)"
              : queued >= bound
                  ? "' is at its bound on host '"
                      + hostId
                      + "': "
                      + queued
                      + " of its events wait or run, at most "
                      + bound
                      + " now: its calls take longer than unloaded (admission.adaptive)"
                  : "' is at the host's bound on host '"
                      + hostId
                      + "': "
                      + queued
                      + " of its events and about "
                      + Math.max(0, config.maxQueuedPerHost() - quota.limit())
                      + " of other applications wait or run, at most "
                      + config.maxQueuedPerHost()
                      + " per host (admission.max_queued_per_host)";
      return new Busy(
          "application '" + app + why + "; retry in " + config.retryAfterS() + " s",
          config.retryAfterS());
    }

    /** The backlog of the host's other apps seen within {@link #FRESH_MS}. */
    private long others(String app) {
      long now = nanoTime.getAsLong();
      long total = 0;
      for (Map.Entry<String, Seen> entry : seen.entrySet()) {
        Seen s = entry.getValue();
        if (now - s.atNanos() > FRESH_NANOS) {
          seen.remove(entry.getKey(), s);
        } else if (!entry.getKey().equals(app)) {
          total += s.queued();
        }
      }
      return total;
    }

    private byte[][] queues(String app, Set<String> grains) {
      Map.Entry<Set<String>, byte[][]> cached = keys.get(app);
      if (cached != null && cached.getKey().equals(grains)) {
        return cached.getValue();
      }
      byte[][] built =
          grains.stream()
              .sorted()
              .flatMap(
                  g ->
                      java.util.stream.Stream.of(
                          Keys.grain(app, g), Keys.ready(app, g), Keys.metrics(app, g)))
              .map(k -> k.getBytes(StandardCharsets.UTF_8))
              .toArray(byte[][]::new);
      keys.put(app, Map.entry(Set.copyOf(grains), built));
      return built;
    }
  }
}
