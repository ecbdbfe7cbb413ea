package dev.sand.agent.metrics;

import dev.sand.contracts.MetricLabels;
import dev.sand.contracts.contractsConstants;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The counters one grain's worker and instances keep in {@code sand:metrics:<app>:<grain>}
 * (decision 0019), read as untrusted tenant input: the grain's own code can write anything to that
 * hash. Only the contract's fields count; a value that is not a non-negative integer of at most 18
 * digits is ignored, error types must be short plain names ({@link MetricLabels}, the worker's
 * rule) and at most {@link #MAX_ERRORS} of them are kept (the others add up under {@code Other}).
 * Parsing never throws.
 *
 * @param runBuckets non-cumulative run counts per bound of {@link #BOUNDS_S}, then {@code +Inf}
 * @param failed failures by error type, sorted by name
 */
public record WorkerCounters(
    long taken,
    long runMicros,
    long[] runBuckets,
    Map<String, Long> failed,
    long timeouts,
    long lost,
    long inFlight) {
  /** The run latency bucket bounds, seconds (the contract's list). */
  public static final double[] BOUNDS_S =
      contractsConstants.METRIC_RUN_BUCKETS_S.stream().mapToDouble(Double::parseDouble).toArray();

  /** How many error types of one grain become labels. */
  public static final int MAX_ERRORS = 20;

  /** The label of error types beyond {@link #MAX_ERRORS} or not shaped like a name. */
  public static final String OTHER = MetricLabels.OTHER_ERROR;

  private static final int MAX_FIELD_BYTES = 128;
  private static final int MAX_VALUE_BYTES = 18; // below Long.MAX_VALUE: no overflow when summed
  private static final List<String> BUCKET_NAMES = bucketNames();

  public WorkerCounters {
    runBuckets = runBuckets.clone();
    failed = Collections.unmodifiableMap(new TreeMap<>(failed));
  }

  /** The counters in {@code hash} (HGETALL of the grain's key); unknown fields are ignored. */
  public static WorkerCounters parse(Map<byte[], byte[]> hash) {
    long taken = 0;
    long runMicros = 0;
    long timeouts = 0;
    long lost = 0;
    long inFlight = 0;
    long[] buckets = new long[BUCKET_NAMES.size()];
    Map<String, Long> failed = new TreeMap<>();
    long otherFailures = 0;
    for (Map.Entry<byte[], byte[]> entry : hash.entrySet()) {
      byte[] rawName = entry.getKey();
      long value = value(entry.getValue());
      if (rawName == null || rawName.length > MAX_FIELD_BYTES || value < 0) {
        continue;
      }
      String name = new String(rawName, StandardCharsets.UTF_8);
      switch (name) {
        case contractsConstants.METRIC_TAKEN -> taken = value;
        case contractsConstants.METRIC_RUN_US -> runMicros = value;
        case contractsConstants.METRIC_TIMEOUTS -> timeouts = value;
        case contractsConstants.METRIC_LOST -> lost = value;
        case contractsConstants.METRIC_IN_FLIGHT -> inFlight = value;
        default -> {
          int bucket = BUCKET_NAMES.indexOf(name);
          if (bucket >= 0) {
            buckets[bucket] = value;
          } else if (name.startsWith(contractsConstants.METRIC_FAILED)) {
            String error =
                MetricLabels.error(name.substring(contractsConstants.METRIC_FAILED.length()));
            if (!OTHER.equals(error) && failed.size() < MAX_ERRORS) {
              failed.put(error, value);
            } else {
              otherFailures += value;
            }
          }
        }
      }
    }
    if (otherFailures > 0) {
      failed.merge(OTHER, otherFailures, Long::sum);
    }
    return new WorkerCounters(taken, runMicros, buckets, failed, timeouts, lost, inFlight);
  }

  /** A non-negative integer of at most 18 digits, else -1. */
  private static long value(byte[] raw) {
    if (raw == null || raw.length == 0 || raw.length > MAX_VALUE_BYTES) {
      return -1;
    }
    long value = 0;
    for (byte b : raw) {
      if (b < '0' || b > '9') {
        return -1;
      }
      value = value * 10 + (b - '0');
    }
    return value;
  }

  private static List<String> bucketNames() {
    List<String> names = new java.util.ArrayList<>();
    for (String bound : contractsConstants.METRIC_RUN_BUCKETS_S) {
      names.add(contractsConstants.METRIC_RUN_BUCKET + bound);
    }
    names.add(contractsConstants.METRIC_RUN_BUCKET + "+Inf");
    return List.copyOf(names);
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof WorkerCounters o
        && taken == o.taken
        && runMicros == o.runMicros
        && java.util.Arrays.equals(runBuckets, o.runBuckets)
        && failed.equals(o.failed)
        && timeouts == o.timeouts
        && lost == o.lost
        && inFlight == o.inFlight;
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hash(taken, runMicros, failed) * 31
        + java.util.Arrays.hashCode(runBuckets);
  }

  @Override
  public String toString() {
    return "WorkerCounters[taken="
        + taken
        + ", failed="
        + failed
        + ", timeouts="
        + timeouts
        + ", lost="
        + lost
        + ", inFlight="
        + inFlight
        + "]";
  }
}
