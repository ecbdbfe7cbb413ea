package dev.sand.agent.metrics;

import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.contracts.Keys;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.output.IntegerOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;

/**
 * What one scrape reads from the host's local bus: the agent queue, the timers, and per grain of
 * each deployed app its queue, its worker's readiness and the counters its worker keeps ({@link
 * WorkerCounters}, tenant-written: read only when small). A command that fails skips what it was
 * for, reported to {@code failed} with its source. One per scrape; not thread-safe.
 */
final class LocalBusReadings {
  /** Worker hashes larger than this (Redis MEMORY USAGE) are not read: tenant input. */
  static final long MAX_WORKER_HASH_BYTES = 16 * 1024;

  /** Worker hashes with more fields than this are not read either. */
  static final long MAX_WORKER_HASH_FIELDS = 256;

  private final String hostId;
  private final RedisLocalBus bus;
  private final BiConsumer<String, RuntimeException> failed;

  /**
   * @param failed told the source ("redis", "worker_counters") and the error (null: a hash too
   *     large) of each reading skipped
   */
  LocalBusReadings(String hostId, RedisLocalBus bus, BiConsumer<String, RuntimeException> failed) {
    this.hostId = hostId;
    this.bus = bus;
    this.failed = failed;
  }

  /** Adds the readings of the host and of {@code apps} (each deployed app → its grains). */
  void collect(Families families, Map<String, List<String>> apps) {
    try {
      byte[] agent = bytes(Keys.agent(hostId));
      byte[] timers = bytes(Keys.timers());
      families.gauge(
          "sand_agent_queue_depth",
          "Events waiting in the agent queue",
          bus.call("LLEN agent queue", c -> c.llen(agent)));
      families.gauge(
          "sand_agent_timers_pending",
          "Timers waiting in sand:timers (all apps of this host)",
          bus.call("ZCARD " + Keys.timers(), c -> c.zcard(timers)));
    } catch (RuntimeException e) {
      failed.accept("redis", e);
      return;
    }
    apps.forEach(
        (app, grains) -> {
          for (String grain : grains) {
            try {
              grain(families, app, grain);
            } catch (RuntimeException e) {
              failed.accept("redis", e);
            }
          }
        });
  }

  private void grain(Families families, String app, String grain) {
    byte[] queue = bytes(Keys.grain(app, grain));
    byte[] ready = bytes(Keys.ready(app, grain));
    byte[] key = bytes(Keys.metrics(app, grain));
    families.gauge(
        "sand_grain_queue_depth",
        "Events waiting in the grain's queue",
        bus.call("LLEN", c -> c.llen(queue)),
        "app",
        app,
        "grain",
        grain);
    families.gauge(
        "sand_grain_worker_ready",
        "Whether the grain's worker is taking events (its readiness key is fresh)",
        bus.call("EXISTS", c -> c.exists(ready)),
        "app",
        app,
        "grain",
        grain);
    long fields = bus.call("HLEN", c -> c.hlen(key));
    if (fields == 0) {
      return; // no instance counted anything yet
    }
    // every field measured (SAMPLES 0), not an estimate: one huge value must not slip through;
    // HLEN first bounds that work
    Long size =
        fields > MAX_WORKER_HASH_FIELDS
            ? Long.valueOf(Long.MAX_VALUE)
            : bus.call(
                "MEMORY USAGE",
                c ->
                    c.dispatch(
                        CommandType.MEMORY,
                        new IntegerOutput<>(ByteArrayCodec.INSTANCE),
                        new CommandArgs<>(ByteArrayCodec.INSTANCE)
                            .add("USAGE")
                            .addKey(key)
                            .add("SAMPLES")
                            .add(0)));
    if (size == null) {
      return; // gone since HLEN
    }
    if (size > MAX_WORKER_HASH_BYTES) {
      failed.accept("worker_counters", null);
      return;
    }
    WorkerCounters counted = WorkerCounters.parse(bus.call("HGETALL", c -> c.hgetall(key)));
    workerCounters(families, app, grain, counted);
  }

  static void workerCounters(Families families, String app, String grain, WorkerCounters w) {
    families.counter(
        "sand_grain_events_taken",
        "Events the grain's instances took",
        w.taken(),
        "app",
        app,
        "grain",
        grain);
    families.histogram(
        "sand_grain_run_duration_seconds",
        "Grain runs (ok or failed) by duration, as the instance timed them",
        WorkerCounters.BOUNDS_S,
        w.runBuckets(),
        w.runMicros() / 1e6,
        "app",
        app,
        "grain",
        grain);
    w.failed()
        .forEach(
            (error, count) ->
                families.counter(
                    "sand_grain_failures",
                    "Failed grain runs and lost instances, by error type",
                    count,
                    "app",
                    app,
                    "grain",
                    grain,
                    "error",
                    error));
    families.counter(
        "sand_grain_timeouts",
        "Instances killed at their deadline",
        w.timeouts(),
        "app",
        app,
        "grain",
        grain);
    families.counter(
        "sand_grain_instances_lost",
        "Instances that ended without finishing their event (signal, exit), timeouts aside",
        w.lost(),
        "app",
        app,
        "grain",
        grain);
    families.gauge(
        "sand_grain_instances_in_flight",
        "Instances running a task (the worker's last report)",
        w.inFlight(),
        "app",
        app,
        "grain",
        grain);
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
