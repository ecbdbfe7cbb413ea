package dev.sand.agent.metrics;

import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot.HistogramDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The metric families of one scrape, filled from values read at scrape time (counters kept
 * elsewhere, Redis, Kafka) and turned into Prometheus snapshots. Not thread-safe: one per scrape.
 */
final class Families {
  private final Map<String, CounterSnapshot.Builder> counters = new LinkedHashMap<>();
  private final Map<String, GaugeSnapshot.Builder> gauges = new LinkedHashMap<>();
  private final Map<String, HistogramSnapshot.Builder> histograms = new LinkedHashMap<>();

  /** A counter point; {@code name} without {@code _total}; {@code labels} as name, value pairs. */
  void counter(String name, String help, double value, String... labels) {
    counters
        .computeIfAbsent(name, n -> CounterSnapshot.builder().name(n).help(help))
        .dataPoint(
            CounterDataPointSnapshot.builder().value(value).labels(Labels.of(labels)).build());
  }

  void gauge(String name, String help, double value, String... labels) {
    gauges
        .computeIfAbsent(name, n -> GaugeSnapshot.builder().name(n).help(help))
        .dataPoint(GaugeDataPointSnapshot.builder().value(value).labels(Labels.of(labels)).build());
  }

  /**
   * A histogram point from non-cumulative {@code counts} per bound of {@code bounds} plus one for
   * {@code +Inf}, and their {@code sum}.
   */
  void histogram(
      String name, String help, double[] bounds, long[] counts, double sum, String... labels) {
    double[] withInf = java.util.Arrays.copyOf(bounds, bounds.length + 1);
    withInf[bounds.length] = Double.POSITIVE_INFINITY;
    histograms
        .computeIfAbsent(name, n -> HistogramSnapshot.builder().name(n).help(help))
        .dataPoint(
            HistogramDataPointSnapshot.builder()
                .classicHistogramBuckets(ClassicHistogramBuckets.of(withInf, counts))
                .sum(sum)
                .labels(Labels.of(labels))
                .build());
  }

  List<MetricSnapshot> snapshots() {
    List<MetricSnapshot> all = new ArrayList<>();
    counters.values().forEach(b -> all.add(b.build()));
    gauges.values().forEach(b -> all.add(b.build()));
    histograms.values().forEach(b -> all.add(b.build()));
    return all;
  }
}
