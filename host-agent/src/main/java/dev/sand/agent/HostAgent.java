package dev.sand.agent;

import dev.sand.agent.apps.Deployer;
import dev.sand.agent.metrics.AgentMetrics;
import dev.sand.agent.metrics.MetricsHandler;
import dev.sand.agent.tracing.SpanExport;
import dev.sand.bridge.kafka.KafkaBridge;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.config.ClusterConfig;
import dev.sand.contracts.TaskCallbackRoutes;
import dev.sand.sandbox.SandboxException;
import dev.sand.sandbox.SandboxExits;
import dev.sand.sandbox.SandboxRuntime;
import dev.sand.sandbox.process.ProcessSandboxRuntime;
import dev.sand.service.JsonHttp;
import dev.sand.store.cassandra.CassandraStore;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.GracefulHandler;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The host agent of one host, wired from a {@link ClusterConfig}: its HTTP endpoint and its
 * dependencies (Redis, Kafka, Cassandra, Docker), each brought up by a {@link DependencyMonitor} so
 * that the services may start in any order.
 *
 * <p>Lifecycle: {@link #create} (no I/O) → {@link #start} (binds the port, starts connecting) →
 * {@link #awaitReady} (blocks until every dependency opened, or throws when one was given up on) →
 * {@link #close}. Thread-safe.
 */
public final class HostAgent implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HostAgent.class);
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(5);

  /**
   * What tests may replace when building an agent through the same wiring as production.
   *
   * @param port HTTP port; 0 picks a free one
   * @param dependencies the backends, in the order health lists them
   */
  public record Wiring(
      int port, List<Dependency> dependencies, Timing timing, Clock clock, Clients clients) {
    public Wiring {
      dependencies = List.copyOf(dependencies);
    }

    /** A wiring without clients: health only, the management API answers 503 (tests). */
    public Wiring(int port, List<Dependency> dependencies, Timing timing, Clock clock) {
      this(port, dependencies, timing, clock, null);
    }

    public Wiring withPort(int newPort) {
      return new Wiring(newPort, dependencies, timing, clock, clients);
    }

    public Wiring withDependencies(List<Dependency> newDependencies) {
      return new Wiring(port, newDependencies, timing, clock, clients);
    }

    public Wiring withTiming(Timing newTiming) {
      return new Wiring(port, dependencies, newTiming, clock, clients);
    }
  }

  /**
   * The connected clients the deploy and event machinery use; each supplier answers null until its
   * dependency first connected (and, for Docker, when it is disabled).
   */
  public record Clients(
      Supplier<RedisLocalBus> redis,
      Supplier<KafkaBridge> kafka,
      Supplier<CassandraStore> cassandra,
      Supplier<SandboxRuntime> docker,
      SandboxExits exits) {}

  private final ClusterConfig config;
  private final Wiring wiring;
  private final List<DependencyMonitor> monitors = new ArrayList<>();
  private final Server server;
  private final ServerConnector connector;
  private final ProcessSandboxRuntime processes;
  private final AgentServices services;

  private HostAgent(ClusterConfig config, Wiring wiring) {
    this.config = config;
    this.wiring = wiring;
    this.processes =
        ProcessSandboxRuntime.create(
            config.sandbox().python(),
            config.sandbox().sourceDirs(),
            config.stateDir(),
            wiring.clients() == null ? new SandboxExits() : wiring.clients().exits());
    for (Dependency dependency : wiring.dependencies()) {
      monitors.add(new DependencyMonitor(dependency, wiring.timing(), wiring.clock()));
    }
    // deploys hold a thread each while they run; health and listing are quick
    QueuedThreadPool threads = new QueuedThreadPool(32, 2);
    threads.setName("http");
    server = new Server(threads);
    connector = new ServerConnector(server, 1, 1);
    connector.setHost(config.hostAgent().bind());
    connector.setPort(wiring.port());
    server.addConnector(connector);
    HealthHandler health = new HealthHandler(this::identity, this::snapshots, this::counters);
    AgentMetrics metrics =
        new AgentMetrics(
            config.hostId(),
            this::counters,
            this::grainsByApp,
            wiring.clients() == null ? () -> null : wiring.clients().redis(),
            wiring.clients() == null ? () -> null : wiring.clients().kafka());
    MetricsHandler metricsHandler = new MetricsHandler(metrics);
    // this run of the agent: the global bus tells live hosts' work from lost work by it
    String incarnation = UUID.randomUUID().toString().replace("-", "");
    services =
        new AgentServices(
            new AgentServices.Parts(
                config,
                wiring.clock(),
                incarnation,
                processes,
                metrics,
                SpanExport.create(config.tracing(), config.hostId())));
    Supplier<CassandraStore> cassandra =
        wiring.clients() == null ? () -> null : wiring.clients().cassandra();
    Ownership ownership = new Ownership(cassandra);
    AppsHandler apps = new AppsHandler(services::deployer, ownership);
    SandboxesHandler sandboxes = new SandboxesHandler(config.hostId(), services::deployer);
    ExecutionsHandler executions = new ExecutionsHandler(cassandra, ownership);
    ExecutionNamesHandler names = new ExecutionNamesHandler(cassandra);
    AccessHandler access = new AccessHandler(cassandra, wiring.clock());
    TriggersHandler triggersHandler = new TriggersHandler(services::deployer, services::triggers);
    TaskCallbacksHandler tasks =
        new TaskCallbacksHandler(cassandra, ownership, config.hostAgent().secret(), wiring.clock());
    InternalAuth auth = new InternalAuth(config.hostAgent().secret());
    Handler router =
        new AgentRoutes(health, auth)
            .route(metricsHandler, MetricsHandler.PATH)
            .route(triggersHandler, TriggersHandler.PATHS)
            .route(apps, AppsHandler.PATHS)
            .route(sandboxes, SandboxesHandler.PATH)
            .route(access, AccessHandler.PATHS)
            .route(names, ExecutionNamesHandler.PATH)
            .route(tasks, TaskCallbackRoutes.COMPLETE, TaskCallbackRoutes.HEARTBEAT)
            .route(executions, ExecutionsHandler.PATHS);
    server.setHandler(new GracefulHandler(router));
    server.setErrorHandler(new JsonHttp.JsonErrorHandler());
    server.setStopTimeout(STOP_TIMEOUT.toMillis());
  }

  /** The production agent for {@code config}. Does no I/O. */
  public static HostAgent create(ClusterConfig config) {
    return create(config, defaultWiring(config));
  }

  /** An agent for {@code config} with parts replaced (tests). Does no I/O. */
  public static HostAgent create(ClusterConfig config, Wiring wiring) {
    return new HostAgent(config, wiring);
  }

  /** The production wiring: real backends, production timing, system clock. */
  public static Wiring defaultWiring(ClusterConfig config) {
    return ProductionWiring.of(config);
  }

  /**
   * Binds the HTTP port and starts connecting to every dependency in the background. Returns once
   * {@code /health} answers (503 until the dependencies are up). First kills what a previous agent
   * of this state dir left in its process sandboxes' cgroups (decision 0021).
   *
   * @throws StartupException when the port cannot be bound, or such a leftover cannot be killed
   */
  public void start() {
    // before anything is served: what a previous agent of this state dir left running (it was
    // killed, or crashed) must not take events beside the sandboxes this one starts
    int reclaimed;
    try {
      reclaimed = processes.reclaim();
    } catch (SandboxException e) {
      throw new StartupException("host agent: " + e.getMessage(), e);
    }
    LOG.atInfo()
        .addKeyValue("host_id", config.hostId())
        .addKeyValue("killed", reclaimed)
        .log("process sandboxes of a previous run reclaimed");
    try {
      server.start();
    } catch (Exception e) {
      throw new StartupException(
          "host agent: cannot listen on "
              + config.hostAgent().bind()
              + ":"
              + wiring.port()
              + ": "
              + e.getMessage(),
          e);
    }
    LOG.atInfo()
        .addKeyValue("host_id", config.hostId())
        .addKeyValue("port", port())
        .log("health endpoint listening");
    monitors.forEach(DependencyMonitor::start);
    Clients clients = wiring.clients();
    if (clients != null) {
      services.start(clients, ready());
    }
  }

  /**
   * Blocks until every dependency opened (or is disabled).
   *
   * @throws StartupException naming each dependency that stayed unreachable past the deadline
   */
  public void awaitReady() {
    List<String> failures = new ArrayList<>();
    for (DependencyMonitor monitor : monitors) {
      try {
        monitor.opened().get();
      } catch (ExecutionException e) {
        failures.add(e.getCause().getMessage());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new StartupException("host agent: interrupted while waiting for dependencies", e);
      }
    }
    if (!failures.isEmpty()) {
      throw new StartupException("host agent cannot start: " + String.join("; ", failures));
    }
    LOG.atInfo()
        .addKeyValue("host_id", config.hostId())
        .addKeyValue("port", port())
        .log("host agent ready");
  }

  /** A future that completes when every dependency opened; for callers that cannot block. */
  public CompletableFuture<Void> ready() {
    return CompletableFuture.allOf(
        monitors.stream().map(DependencyMonitor::opened).toArray(CompletableFuture[]::new));
  }

  /** The bound HTTP port (useful when the wiring asked for port 0). */
  public int port() {
    return connector.getLocalPort();
  }

  private Map<String, Object> identity() {
    Map<String, Object> identity = new LinkedHashMap<>();
    identity.put("service", "host-agent");
    identity.put("host_id", config.hostId());
    identity.put("port", port());
    identity.put("pid", ProcessHandle.current().pid());
    return identity;
  }

  private List<DependencyMonitor.Snapshot> snapshots() {
    return monitors.stream().map(DependencyMonitor::snapshot).toList();
  }

  /** The grains of every app deployed here, by app; none before the deployer opened. */
  private Map<String, List<String>> grainsByApp() {
    Deployer current = services.deployer();
    return current == null ? Map.of() : current.grainsByApp();
  }

  private Map<String, Long> counters() {
    return services.counters();
  }

  /**
   * Stops gracefully: lets in-flight requests finish (up to 5 s), stops the monitors, closes the
   * connections. Idempotent; never throws.
   */
  @Override
  public void close() {
    services.close();
    processes.close();
    try {
      server.stop();
    } catch (Exception e) {
      LOG.atWarn().addKeyValue("error", e.toString()).log("http server stop failed");
    }
    monitors.forEach(DependencyMonitor::close);
    LOG.atInfo().addKeyValue("host_id", config.hostId()).log("host agent stopped");
  }
}
