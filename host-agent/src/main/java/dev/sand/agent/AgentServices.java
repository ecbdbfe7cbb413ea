package dev.sand.agent;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.agent.apps.Deployer;
import dev.sand.agent.apps.Executions;
import dev.sand.agent.bus.CallbackWaits;
import dev.sand.agent.bus.EventLoops;
import dev.sand.agent.bus.ExecutionRecorder;
import dev.sand.agent.bus.GlobalBus;
import dev.sand.agent.data.DataRequests;
import dev.sand.agent.data.GlobalData;
import dev.sand.agent.metrics.AgentMetrics;
import dev.sand.agent.tracing.SpanExport;
import dev.sand.agent.triggers.TriggerTopics;
import dev.sand.agent.triggers.Triggers;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.config.ClusterConfig;
import dev.sand.contracts.Keys;
import dev.sand.sandbox.process.ProcessSandboxRuntime;
import dev.sand.service.JsonHttp;
import dev.sand.store.cassandra.CassandraStore;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's work behind its HTTP endpoint: the deployer and the event loops, started with the
 * agent; the global bus, the execution recorder, the data requests, the triggers and the app sync,
 * started once every dependency connected. Stops them in the reverse order of their dependence.
 * Thread-safe: each part is published through a volatile field once it started.
 */
final class AgentServices implements AutoCloseable {
  // the agent's name: the log lines it wrote before this class existed keep their logger
  private static final Logger LOG = LoggerFactory.getLogger(HostAgent.class);
  private static final Duration SYNC_EVERY = Duration.ofSeconds(2);
  // How long the global bus waits to learn which lost events' executions have ended (decision
  // 0045) before it replays them all: reads in parallel take milliseconds on a busy host; a
  // replica cut off the network would hold them for the driver's whole request timeout.
  private static final Duration ENDS_WAIT = Duration.ofMillis(500);

  /**
   * What the services are built from.
   *
   * @param incarnation this run of the agent: the global bus tells live hosts' work from lost work
   *     by it
   * @param spans the span export, or null when tracing is off
   */
  record Parts(
      ClusterConfig config,
      Clock clock,
      String incarnation,
      ProcessSandboxRuntime processes,
      AgentMetrics metrics,
      SpanExport spans) {}

  private final Parts parts;
  private final ClusterConfig config;
  private volatile Deployer deployer;
  private volatile EventLoops loops;
  private volatile GlobalBus globalBus;
  private volatile ExecutionRecorder recorder;
  private volatile DataRequests dataRequests;
  private volatile Triggers triggers;
  private volatile Thread appSync;
  private volatile boolean running = true;

  AgentServices(Parts parts) {
    this.parts = parts;
    this.config = parts.config();
  }

  /** The deployer once the dependencies connected, else null. */
  Deployer deployer() {
    return deployer;
  }

  /** The triggers once the dependencies connected, else null. */
  Triggers triggers() {
    return triggers;
  }

  /**
   * Starts the event loops now and the rest once {@code ready} completes (on the thread that
   * completes it). Returns at once.
   */
  void start(HostAgent.Clients clients, CompletableFuture<Void> ready) {
    Executions executions = new Executions(config.hostId(), parts.clock());
    Deployer created =
        new Deployer(
            config,
            new Deployer.Runtimes(clients.redis(), clients.docker(), parts.processes()),
            executions,
            clients.cassandra(),
            parts.clock(),
            JsonHttp.MAPPER,
            new TriggerTopics(clients.kafka()));
    loops =
        new EventLoops(
            config.hostId(),
            parts.incarnation(),
            clients.redis(),
            clients.kafka(),
            created,
            executions,
            clients.exits(),
            new CallbackWaits(
                config.hostId(),
                config.hostAgent().secret(),
                clients.redis(),
                clients.cassandra(),
                parts.clock()));
    loops.onResult(
        event -> {
          parts.metrics().executionEnded(event);
          if (parts.spans() != null) {
            parts.spans().finished(event);
          }
        });
    loops.start();
    // the management API, the deployments on record and the global bus open once the
    // dependencies are connected
    ready.thenRun(() -> startConnected(clients, created, executions));
  }

  private void startConnected(HostAgent.Clients clients, Deployer created, Executions executions) {
    clients.redis().get().set(Keys.incarnation(), incarnation(), null);
    deployer = created;
    GlobalBus bus =
        new GlobalBus(
            config.kafka(),
            config.hostId(),
            parts.incarnation(),
            clients.redis(),
            clients.kafka(),
            new GlobalBus.Host() {
              @Override
              public Set<String> topics() {
                return GlobalBus.topicsOf(created.grainsByApp());
              }

              @Override
              public boolean isDeployed(String app) {
                return created.isDeployed(app);
              }

              @Override
              public Map<String, Instant> ended(Set<String> executionIds) {
                CassandraStore store = clients.cassandra().get();
                if (store == null) {
                  throw new IllegalStateException("cassandra is not connected");
                }
                return store.ends().of(executionIds, ENDS_WAIT);
              }
            },
            executions,
            created::note);
    bus.start();
    globalBus = bus;
    ExecutionRecorder records =
        new ExecutionRecorder(
            config.kafka(), "sand-records-" + config.hostId(), clients.cassandra());
    records.start();
    recorder = records;
    DataRequests requests =
        new DataRequests(
            clients.redis(),
            () -> created.grainsByApp().keySet(),
            new GlobalData(clients.cassandra()),
            parts.clock());
    requests.start();
    dataRequests = requests;
    Triggers fired =
        new Triggers(
            config.hostId(),
            parts.incarnation(),
            config.kafka(),
            clients.cassandra(),
            clients.kafka(),
            new Triggers.Apps() {
              @Override
              public List<JsonNode> deployedHere() {
                return List.copyOf(created.deployedHere());
              }

              @Override
              public void note(String app, String line) {
                created.note(app, line);
              }
            },
            parts.clock(),
            parts.metrics().registry());
    fired.start();
    triggers = fired;
    Thread sync = new Thread(() -> syncLoop(created, clients), "app-sync");
    sync.setDaemon(true);
    sync.start();
    appSync = sync;
  }

  private byte[] incarnation() {
    return parts.incarnation().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Deploys what is on record and not here, at once and then every {@link #SYNC_EVERY}; keeps the
   * incarnation key in Redis (a restarted Redis would have lost it).
   */
  private void syncLoop(Deployer created, HostAgent.Clients clients) {
    while (running) {
      try {
        created.sync();
        RedisLocalBus bus = clients.redis().get();
        if (bus != null) {
          bus.set(Keys.incarnation(), incarnation(), null);
        }
      } catch (RuntimeException e) {
        LOG.atWarn().addKeyValue("error", e.toString()).log("app sync failed; retrying");
      }
      try {
        Thread.sleep(SYNC_EVERY.toMillis());
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** The counters of the parts that run (none before their dependencies connect). */
  Map<String, Long> counters() {
    Map<String, Long> all = new HashMap<>();
    EventLoops queue = loops;
    if (queue != null) {
      all.putAll(queue.counters());
    }
    GlobalBus bus = globalBus;
    if (bus != null) {
      all.putAll(bus.counters());
    }
    ExecutionRecorder records = recorder;
    if (records != null) {
      all.putAll(records.counters());
    }
    DataRequests requests = dataRequests;
    if (requests != null) {
      all.putAll(requests.counters());
    }
    if (parts.spans() != null) {
      all.putAll(parts.spans().counters());
    }
    return all;
  }

  /**
   * Stops the sync, then what feeds the sandboxes (buses, recorder, data, triggers, loops), the
   * span export, and last the sandboxes themselves. Idempotent; never throws.
   */
  @Override
  public void close() {
    running = false;
    Thread sync = appSync;
    if (sync != null) {
      sync.interrupt();
    }
    GlobalBus bus = globalBus;
    if (bus != null) {
      bus.close();
    }
    ExecutionRecorder records = recorder;
    if (records != null) {
      records.close();
    }
    DataRequests requests = dataRequests;
    if (requests != null) {
      requests.close();
    }
    Triggers fired = triggers;
    if (fired != null) {
      fired.close();
    }
    EventLoops stopping = loops;
    if (stopping != null) {
      stopping.close();
    }
    if (parts.spans() != null) {
      parts.spans().close();
    }
    Deployer apps = deployer;
    if (apps != null) {
      apps.close();
    }
  }
}
