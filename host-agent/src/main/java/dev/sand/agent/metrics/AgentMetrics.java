package dev.sand.agent.metrics;

import dev.sand.bridge.kafka.KafkaBridge;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.MetricLabels;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One host agent's Prometheus metrics (decision 0019). Most are read when scraped: the agent's own
 * counters, per deployed app its sandbox, per grain its queue depth, ready worker and the counters
 * its worker keeps in Redis ({@link WorkerCounters}, untrusted), the agent queue and the timers,
 * and the lag of the cluster's consumer groups ({@link ConsumerLag}). Executions that end are
 * counted as the agent publishes their RESULT/ERROR ({@link #executionEnded}).
 *
 * <p>A scrape never fails because a source does: each source that throws is skipped and counted in
 * {@code sand_agent_scrape_errors_total{source}}. Thread-safe.
 */
public final class AgentMetrics implements MultiCollector {
  private static final Logger LOG = LoggerFactory.getLogger(AgentMetrics.class);

  /** How many (app, status, error) label sets {@code sand_executions_ended_total} may grow to. */
  static final int MAX_ENDED_LABELS = 500;

  /** The agent's counters (as {@code /health} shows them) that become metrics, and how. */
  private static final Map<String, String[]> COUNTERS =
      Map.ofEntries(
          Map.entry("in_flight", gauge("sand_agent_events_in_flight", "Events taken by instances")),
          Map.entry(
              "backed_up",
              counter("sand_agent_backups_published", "Records handed to the global bus")),
          Map.entry(
              "backups_acknowledged",
              counter("sand_agent_backups_acknowledged", "Records the global bus acknowledged")),
          Map.entry(
              "backup_errors",
              counter("sand_agent_backup_errors", "Publishes to the global bus that failed")),
          Map.entry(
              "backups_unacknowledged",
              gauge("sand_agent_backups_unacknowledged", "Backups waiting for the broker")),
          Map.entry(
              "backups_not_needed",
              counter("sand_agent_backups_not_needed", "Backups dropped: their event finished")),
          Map.entry(
              "recorded",
              counter(
                  "sand_agent_records_recorded",
                  "Result and history records written to Cassandra")),
          Map.entry(
              "record_errors",
              counter("sand_agent_record_errors", "Result and history records Cassandra refused")),
          Map.entry(
              "delivered",
              counter("sand_agent_global_events_delivered", "Events taken from the global bus")),
          Map.entry(
              "unfinished_tracked",
              gauge("sand_agent_unfinished_tracked", "Unfinished events of owned partitions")),
          Map.entry("partitions", gauge("sand_agent_partitions", "Global bus partitions owned")),
          Map.entry(
              "gdata_served", counter("sand_agent_gdata_served", "Global data requests served")),
          Map.entry(
              "gdata_dropped",
              counter("sand_agent_gdata_dropped", "Global data requests dropped")));

  /** Counters that are recovery events: {@code sand_agent_recovery_events_total{kind}}. */
  private static final Map<String, String> RECOVERY =
      Map.of(
          "replayed", "sandbox_replay",
          "replayed_after_host_loss", "host_loss_replay",
          "watchdog_restarts", "watchdog_restart");

  private final String hostId;
  private final Supplier<Map<String, Long>> counters;
  private final Supplier<Map<String, List<String>>> grainsByApp;
  private final Supplier<RedisLocalBus> redis;
  private final ConsumerLag lag;
  private final PrometheusRegistry registry = new PrometheusRegistry();
  private final Counter ended;
  // counted while collecting, so exported by collect() itself (the registry collects its
  // counters before its multi-collectors)
  private final Map<String, AtomicLong> scrapeErrors = new ConcurrentHashMap<>();
  private final Set<String> endedLabels = ConcurrentHashMap.newKeySet();

  /**
   * @param counters the agent's counters ({@code /health}); names not listed here are not exported
   * @param grainsByApp the apps deployed here and their grains (empty before deploys are loaded)
   * @param redis the local bus, null while not connected
   * @param kafka the Kafka clients, null while not connected
   */
  public AgentMetrics(
      String hostId,
      Supplier<Map<String, Long>> counters,
      Supplier<Map<String, List<String>>> grainsByApp,
      Supplier<RedisLocalBus> redis,
      Supplier<KafkaBridge> kafka) {
    this.hostId = hostId;
    this.counters = counters;
    this.grainsByApp = grainsByApp;
    this.redis = redis;
    this.lag = new ConsumerLag(kafka);
    registry.register(this);
    this.ended =
        Counter.builder()
            .name("sand_executions_ended")
            .help(
                "Executions whose RESULT (SUCCEEDED) or ERROR (FAILED) this agent published, by"
                    + " app, status and error type")
            .labelNames("app", "status", "error")
            .withoutExemplars()
            .register(registry);
  }

  /** What {@code GET /metrics} serves. */
  public PrometheusRegistry registry() {
    return registry;
  }

  /**
   * Counts a RESULT or ERROR event this agent publishes (other kinds are ignored). The event comes
   * from a tenant's instance: an app not deployed here is labelled "", an error type that is not a
   * plain name "Other" (the workers' rule, {@link MetricLabels}), and label sets beyond {@link
   * #MAX_ENDED_LABELS} go to "Other" too.
   */
  public void executionEnded(EventMessage event) {
    boolean ok = event.getKind() == EventKind.RESULT;
    if (!ok && event.getKind() != EventKind.ERROR) {
      return;
    }
    String app = event.getApp();
    Map<String, List<String>> apps = grainsByApp.get();
    if (app == null || apps == null || !apps.containsKey(app)) {
      app = "";
    }
    String error = ok ? "" : MetricLabels.error(event.getError());
    String status = (ok ? ExecutionStatus.SUCCEEDED : ExecutionStatus.FAILED).name();
    String key = app + '\0' + status + '\0' + error;
    if (!endedLabels.contains(key)) {
      if (endedLabels.size() >= MAX_ENDED_LABELS) {
        app = "";
        error = ok ? "" : WorkerCounters.OTHER;
      } else {
        endedLabels.add(key);
      }
    }
    ended.labelValues(app, status, error).inc();
  }

  @Override
  public MetricSnapshots collect() {
    Families families = new Families();
    agentCounters(families);
    Map<String, List<String>> apps = Map.of();
    try {
      Map<String, List<String>> known = grainsByApp.get();
      apps = known == null ? Map.of() : known;
    } catch (RuntimeException e) {
      failed("apps", e);
    }
    for (String app : apps.keySet()) {
      families.gauge(
          "sand_agent_sandboxes", "Sandboxes of deployed apps on this host", 1, "app", app);
    }
    RedisLocalBus bus = redis.get();
    if (bus != null) {
      new LocalBusReadings(hostId, bus, this::failed).collect(families, apps);
    }
    try {
      lag.read().forEach((group, value) -> consumerLag(families, group, value));
    } catch (RuntimeException e) {
      failed("kafka", e);
    }
    scrapeErrors.forEach(
        (source, count) ->
            families.counter(
                "sand_agent_scrape_errors",
                "Sources a scrape had to skip (apps, redis, kafka, worker_counters)",
                count.get(),
                "source",
                source));
    return new MetricSnapshots(families.snapshots());
  }

  private static void consumerLag(Families families, String group, long value) {
    families.gauge(
        "sand_agent_kafka_consumer_lag",
        "Records of the group's topics not yet committed (end offset minus committed), summed",
        value,
        "group",
        group);
  }

  private void agentCounters(Families families) {
    Map<String, Long> values;
    try {
      values = counters.get();
    } catch (RuntimeException e) {
      failed("agent", e);
      return;
    }
    values.forEach(
        (name, value) -> {
          String[] metric = COUNTERS.get(name);
          if (metric != null && "counter".equals(metric[0])) {
            families.counter(metric[1], metric[2], value);
          } else if (metric != null) {
            families.gauge(metric[1], metric[2], value);
          }
          String kind = RECOVERY.get(name);
          if (kind != null) {
            families.counter(
                "sand_agent_recovery_events",
                "Recovery events: events replayed after a sandbox or host was lost, sandboxes the"
                    + " watchdog restarted",
                value,
                "kind",
                kind);
          }
        });
  }

  private void failed(String source, RuntimeException e) {
    scrapeErrors.computeIfAbsent(source, s -> new AtomicLong()).incrementAndGet();
    LOG.atWarn()
        .addKeyValue("source", source)
        .addKeyValue("error", e == null ? "worker counters too large" : e.toString())
        .log("metrics scrape skipped a source");
  }

  private static String[] counter(String name, String help) {
    return new String[] {"counter", name, help};
  }

  private static String[] gauge(String name, String help) {
    return new String[] {"gauge", name, help};
  }
}
