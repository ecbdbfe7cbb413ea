package dev.sand.agent.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class WorkerCountersTest {
  private static Map<byte[], byte[]> hash(String... pairs) {
    Map<byte[], byte[]> hash = new LinkedHashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      hash.put(
          pairs[i].getBytes(StandardCharsets.UTF_8), pairs[i + 1].getBytes(StandardCharsets.UTF_8));
    }
    return hash;
  }

  private static String render(WorkerCounters counters) throws IOException {
    Families families = new Families();
    LocalBusReadings.workerCounters(families, "shop", "resize", counters);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrometheusTextFormatWriter.create().write(out, new MetricSnapshots(families.snapshots()));
    return out.toString(StandardCharsets.UTF_8);
  }

  /** The contract's fields become the counters, histogram buckets and error types. */
  @Test
  void parse_contractFields_areCounted() {
    WorkerCounters counters =
        WorkerCounters.parse(
            hash(
                "taken",
                "7",
                "runs",
                "6",
                "run_us",
                "1500000",
                "run_le:0.005",
                "2",
                "run_le:1",
                "3",
                "run_le:+Inf",
                "1",
                "failed:KeyError",
                "2",
                "timeouts",
                "1",
                "lost",
                "0",
                "in_flight",
                "3"));
    assertThat(counters.taken()).isEqualTo(7);
    assertThat(counters.runMicros()).isEqualTo(1_500_000);
    assertThat(counters.runBuckets()[0]).isEqualTo(2);
    assertThat(counters.runBuckets()[7]).isEqualTo(3); // bound 1 s
    assertThat(counters.runBuckets()[WorkerCounters.BOUNDS_S.length]).isEqualTo(1);
    assertThat(counters.failed()).containsExactly(Map.entry("KeyError", 2L));
    assertThat(counters.timeouts()).isEqualTo(1);
    assertThat(counters.inFlight()).isEqualTo(3);
  }

  /** Tenant-written garbage is ignored: non-numbers, negatives, huge values, unknown buckets. */
  @Test
  void parse_hostileValues_areIgnored() {
    WorkerCounters counters =
        WorkerCounters.parse(
            hash(
                "taken",
                "-5",
                "in_flight",
                "1e9",
                "run_us",
                "99999999999999999999999",
                "run_le:0.3",
                "4",
                "timeouts",
                "",
                "lost",
                "12 ",
                "in_flight",
                "NaN",
                "whatever",
                "1"));
    assertThat(counters)
        .isEqualTo(
            new WorkerCounters(
                0, 0, new long[WorkerCounters.BOUNDS_S.length + 1], Map.of(), 0, 0, 0));
  }

  /** Error types that are not plain names, and those beyond the cap, count as Other. */
  @Test
  void parse_manyOrOddErrorTypes_foldIntoOther() {
    Map<byte[], byte[]> hash = new LinkedHashMap<>();
    for (int i = 0; i < 50; i++) {
      hash.put(("failed:E" + i).getBytes(StandardCharsets.UTF_8), "1".getBytes());
    }
    hash.put("failed:bad\"label}\n".getBytes(StandardCharsets.UTF_8), "5".getBytes());
    hash.put(("failed:" + "x".repeat(100)).getBytes(StandardCharsets.UTF_8), "2".getBytes());
    WorkerCounters counters = WorkerCounters.parse(hash);
    assertThat(counters.failed()).hasSize(WorkerCounters.MAX_ERRORS + 1);
    assertThat(counters.failed().get(WorkerCounters.OTHER)).isEqualTo(30 + 5 + 2);
  }

  /** A hostile hash still renders as valid exposition text with bounded labels. */
  @Test
  void render_hostileCounters_staysWellFormed() throws IOException {
    String text =
        render(
            WorkerCounters.parse(
                hash("failed:a\"b", "3", "failed:States.Timeout", "1", "run_le:+Inf", "2")));
    assertThat(text)
        .contains("sand_grain_failures_total{app=\"shop\",error=\"Other\",grain=\"resize\"} 3")
        .contains(
            "sand_grain_failures_total{app=\"shop\",error=\"States.Timeout\",grain=\"resize\"} 1")
        .contains(
            "sand_grain_run_duration_seconds_bucket{app=\"shop\",grain=\"resize\",le=\"+Inf\"} 2")
        .doesNotContain("a\\\"b");
  }

  /** Buckets are non-cumulative in Redis and cumulative in the exposition. */
  @Test
  void render_buckets_areCumulative() throws IOException {
    String text = render(WorkerCounters.parse(hash("run_le:0.005", "2", "run_le:0.01", "3")));
    assertThat(text)
        .contains(
            "sand_grain_run_duration_seconds_bucket{app=\"shop\",grain=\"resize\",le=\"0.005\"} 2")
        .contains(
            "sand_grain_run_duration_seconds_bucket{app=\"shop\",grain=\"resize\",le=\"0.01\"} 5")
        .contains("sand_grain_run_duration_seconds_count{app=\"shop\",grain=\"resize\"} 5");
  }
}
