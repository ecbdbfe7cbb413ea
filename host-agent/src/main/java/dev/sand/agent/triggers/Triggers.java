package dev.sand.agent.triggers;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.bridge.kafka.KafkaBridge;
import dev.sand.config.KafkaConfig;
import dev.sand.store.TriggerFiring;
import dev.sand.store.TriggerState;
import dev.sand.store.cassandra.CassandraStore;
import dev.sand.store.cassandra.TriggerTable;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The triggers of the apps this host runs (decision 0034): schedules ({@link ScheduleRunner}) and
 * topic consumers ({@link TopicTrigger}), kept in step with the deployed apps once a second; their
 * pause state, read from Cassandra every {@link #STATE_REFRESH_MS} (and at once on this agent when
 * it pauses or resumes one); and what the API shows of them ({@link TriggerDocs}). One thread;
 * {@link #close} stops it.
 */
public final class Triggers implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Triggers.class);
  private static final long TICK_MS = 1000;
  static final long STATE_REFRESH_MS = 5000;

  /** The apps deployed on this host, as their descriptions (metadata). */
  public interface Apps {
    List<JsonNode> deployedHere();

    /** Notes a line in the app's log ({@code sand logs}). */
    void note(String app, String line);
  }

  /** A trigger unknown to an app. */
  public static final class UnknownTrigger extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UnknownTrigger(String message) {
      super(message);
    }
  }

  private final String hostId;
  private final KafkaConfig kafka;
  private final Supplier<CassandraStore> cassandra;
  private final TriggerDocs docs;
  private final Apps apps;
  private final Clock clock;
  private final Starts starts;
  private final ScheduleRunner schedules;
  private final Counter firings;
  private final Counter skippedRecords;
  private final Map<String, TopicTrigger> topics = new ConcurrentHashMap<>();
  private final Map<String, Map<String, TriggerState>> states = new ConcurrentHashMap<>();
  private final BiConsumer<TriggerDef, String> started;
  // per app: its metadata as last read and its triggers parsed from it, read again only when
  // the metadata changes (a deploy stores a new document)
  private final Map<String, ParsedTriggers> parsed = new HashMap<>();
  private final Thread thread;
  private volatile boolean running = true;
  private long statesReadMs;

  public Triggers(
      String hostId,
      String incarnation,
      KafkaConfig kafka,
      Supplier<CassandraStore> cassandra,
      Supplier<KafkaBridge> bridge,
      Apps apps,
      Clock clock,
      PrometheusRegistry registry) {
    this.hostId = hostId;
    this.kafka = kafka;
    this.cassandra = cassandra;
    this.docs = new TriggerDocs(bridge, clock);
    this.apps = apps;
    this.clock = clock;
    this.starts = new Starts(hostId, Starts.kafka(kafka, "sand-triggers-" + hostId));
    this.firings =
        Counter.builder()
            .name("sand_trigger_firings")
            .help("Executions this agent started for a trigger (a schedule's firing, a record)")
            .labelNames("app", "trigger")
            .withoutExemplars()
            .register(registry);
    this.skippedRecords =
        Counter.builder()
            .name("sand_trigger_records_skipped")
            .help("Records of a topic trigger that started nothing (not JSON, or too large)")
            .labelNames("app", "trigger")
            .withoutExemplars()
            .register(registry);
    GaugeWithCallback.builder()
        .name("sand_trigger_lag_records")
        .help("Records of a topic trigger's partitions on this host not started yet")
        .labelNames("app", "trigger")
        .callback(
            cb ->
                topics
                    .values()
                    .forEach(
                        t -> {
                          if (t.lag() >= 0) {
                            cb.call(t.lag(), t.def().app(), t.def().name());
                          }
                        }))
        .register(registry);
    this.started = (def, id) -> firings.labelValues(def.app(), def.name()).inc();
    this.schedules = new ScheduleRunner(incarnation, claims(), starts, started);
    this.thread = new Thread(this::run, "triggers");
    thread.setDaemon(true);
  }

  public void start() {
    thread.start();
  }

  private void run() {
    while (running) {
      try {
        tick();
      } catch (RuntimeException e) {
        LOG.atWarn().addKeyValue("error", e.toString()).log("triggers tick failed; trying again");
      }
      try {
        Thread.sleep(TICK_MS);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  private void tick() {
    long now = clock.millis();
    Map<String, ParsedTriggers> read = new HashMap<>();
    for (JsonNode app : apps.deployedHere()) {
      String name = app.path("name").asText();
      ParsedTriggers known = parsed.get(name);
      read.put(name, known != null && known.metadata() == app ? known : ParsedTriggers.of(app));
    }
    parsed.clear();
    parsed.putAll(read);
    Map<String, ParsedTriggers> current = new HashMap<>(read);
    current.values().removeIf(p -> p.defs().isEmpty());
    CassandraStore store = cassandra.get();
    if (store == null) {
      return;
    }
    if (now - statesReadMs >= STATE_REFRESH_MS) {
      statesReadMs = now;
      states.keySet().retainAll(current.keySet());
      for (String app : current.keySet()) {
        states.put(app, new ConcurrentHashMap<>(store.triggers().states(app)));
      }
    }
    Set<String> keys = new HashSet<>();
    for (ParsedTriggers app : current.values()) {
      for (TriggerDef def : app.defs()) {
        String key = def.app() + "/" + def.name();
        keys.add(key);
        TriggerState state = state(def.app(), def.name());
        if (def.isSchedule()) {
          schedules.tick(def, state, app.deployedAtMs(), now);
        } else {
          TopicTrigger running = topics.get(key);
          if (running != null && !running.def().topic().equals(def.topic())) {
            running.close();
            topics.remove(key);
            running = null;
          }
          if (running == null) {
            running =
                new TopicTrigger(
                    kafka,
                    hostId,
                    def,
                    starts,
                    app.payloadLimitBytes(),
                    (d, line) -> {
                      skippedRecords.labelValues(d.app(), d.name()).inc();
                      apps.note(d.app(), line);
                    },
                    started);
            topics.put(key, running);
            running.start();
          }
          running.paused(state.paused());
        }
      }
    }
    for (String key : List.copyOf(topics.keySet())) {
      if (!keys.contains(key)) {
        topics.remove(key).close();
      }
    }
    schedules.retain(keys);
  }

  private TriggerState state(String app, String trigger) {
    return states.getOrDefault(app, Map.of()).getOrDefault(trigger, TriggerState.ACTIVE);
  }

  /**
   * The triggers of {@code app} as the API shows them (deployed here or not: the description is the
   * app's metadata).
   */
  public List<ObjectNode> describe(JsonNode metadata) {
    return docs.describe(metadata, table());
  }

  /**
   * Pauses or resumes trigger {@code name} of {@code metadata}'s app; returns its document.
   *
   * @throws UnknownTrigger when the app has no such trigger
   */
  public ObjectNode setPaused(JsonNode metadata, String name, boolean paused) {
    String app = metadata.path("name").asText();
    List<String> names = new ArrayList<>();
    metadata.path("triggers").forEach(t -> names.add(t.path("name").asText()));
    if (!names.contains(name)) {
      throw new UnknownTrigger(
          "no trigger '"
              + name
              + "' in app '"
              + app
              + "'"
              + (names.isEmpty()
                  ? " (it has none)"
                  : " (it has: " + String.join(", ", names) + ")"));
    }
    TriggerTable table = table();
    TriggerState now = table.states(app).getOrDefault(name, TriggerState.ACTIVE);
    if (now.paused() != paused) {
      long at = clock.millis();
      table.setPaused(app, name, paused, at);
      states
          .computeIfAbsent(app, a -> new ConcurrentHashMap<>())
          .put(name, new TriggerState(paused, at));
      TopicTrigger topic = topics.get(app + "/" + name);
      if (topic != null) {
        topic.paused(paused);
      }
      apps.note(app, "trigger " + name + (paused ? " paused" : " resumed"));
    }
    return describe(metadata).stream()
        .filter(d -> name.equals(d.path("name").asText()))
        .findFirst()
        .orElseGet(JsonNodeFactory.instance::objectNode);
  }

  private TriggerTable table() {
    CassandraStore store = cassandra.get();
    if (store == null) {
      throw new dev.sand.store.StoreException("the global data layer is not connected yet", null);
    }
    return store.triggers();
  }

  private ScheduleRunner.Claims claims() {
    return new ScheduleRunner.Claims() {
      @Override
      public Optional<TriggerFiring> last(String app, String trigger) {
        return table().last(app, trigger);
      }

      @Override
      public Optional<TriggerFiring> claim(
          String app, String trigger, String firing, String executionId, String owner, long nowMs) {
        return table().claim(app, trigger, firing, executionId, owner, nowMs);
      }

      @Override
      public boolean takeOver(
          String app, String trigger, TriggerFiring held, String owner, long nowMs) {
        return table().takeOver(app, trigger, held, owner, nowMs);
      }

      @Override
      public void published(String app, String trigger, String firing) {
        table().published(app, trigger, firing);
      }
    };
  }

  @Override
  public void close() {
    running = false;
    thread.interrupt();
    topics.values().forEach(TopicTrigger::close);
    topics.clear();
    starts.close();
  }
}
