package dev.sand.frontend;

import dev.sand.config.ClusterConfig;
import dev.sand.contracts.Names;
import dev.sand.service.JsonHttp;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.GracefulHandler;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One frontend process: the HTTP entry of SAND on one port, wired from a {@link ClusterConfig}.
 *
 * <p>Its id is {@code fe-<port>} (the bound port): the routing key of its reply queue {@code
 * sand:reply:fe-<port>}, which one dispatcher thread per host drains for the synchronous callers.
 * It reaches every host of the cluster ({@link HostLinks}).
 *
 * <p>Lifecycle: {@link #create} (no I/O) → {@link #start} (binds the port, connects to Redis,
 * starts the reply dispatcher, serves) → {@link #close} (callers still waiting get 202 RUNNING,
 * then in-flight requests finish, up to 5 s). Thread-safe.
 */
public final class Frontend implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Frontend.class);
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(5);
  private static final Duration REDIS_TIMEOUT = Duration.ofSeconds(5);

  private final ClusterConfig config;
  private final int requestedPort;
  private final Server server;
  private final ServerConnector connector;
  private final PendingReplies pending = new PendingReplies();
  private volatile String frontendId;
  private HostLinks hosts;
  private KafkaEntry kafkaEntry;

  private final Authenticator.Lookup tokenLookup;

  private Frontend(ClusterConfig config, int port, Authenticator.Lookup tokenLookup) {
    this.config = config;
    this.requestedPort = port;
    this.tokenLookup = tokenLookup;
    // bounded pool: synchronous invocations wait without a thread; only proxied deploys hold one
    QueuedThreadPool threads = new QueuedThreadPool(64, 4);
    threads.setName("http");
    server = new Server(threads);
    connector = new ServerConnector(server, 1, 1);
    // nginx on the same host is the only client (every /v1 call carries a bearer token)
    connector.setHost("127.0.0.1");
    connector.setPort(port);
    server.addConnector(connector);
    server.setErrorHandler(new JsonHttp.JsonErrorHandler());
    server.setStopTimeout(STOP_TIMEOUT.toMillis());
  }

  /**
   * The frontend that listens on {@code port} (0 picks a free port; tests). Production callers pass
   * one of {@code frontend.ports}. Does no I/O.
   */
  public static Frontend create(ClusterConfig config, int port) {
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("port must be 0..65535, got " + port);
    }
    return new Frontend(config, port, null);
  }

  /**
   * As {@link #create(ClusterConfig, int)}, with tokens looked up by {@code tokenLookup} (tests).
   */
  static Frontend create(ClusterConfig config, int port, Authenticator.Lookup tokenLookup) {
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("port must be 0..65535, got " + port);
    }
    return new Frontend(config, port, tokenLookup);
  }

  /**
   * Binds the port, connects to Redis, starts the reply dispatcher and serves. Blocks up to about 5
   * s on Redis. Call once.
   *
   * @throws IllegalStateException naming the port or the Redis socket when either is unusable
   */
  public synchronized void start() {
    try {
      // bind first: the id, and so the reply queue, is named after the bound port
      connector.open();
    } catch (IOException e) {
      throw new IllegalStateException(
          "frontend: cannot listen on 127.0.0.1:" + requestedPort + ": " + e.getMessage(), e);
    }
    frontendId = Names.requireHostId("fe-" + connector.getLocalPort());
    kafkaEntry = new KafkaEntry(config.kafka(), "sand-" + frontendId);
    kafkaEntry.open();
    try {
      hosts =
          new HostLinks(
              config.hosts(),
              config.redis().password(),
              config.hostAgent().secret(),
              frontendId,
              pending,
              kafkaEntry,
              new Admission(config.admission(), System::nanoTime));
    } catch (IllegalStateException e) {
      closeConnector();
      kafkaEntry.close();
      throw e;
    }
    InvokeRoute invoke = new InvokeRoute(hosts, pending, config.frontend().maxPayloadBytes());
    HostLinks linked = hosts;
    Authenticator auth =
        new Authenticator(
            tokenLookup != null ? tokenLookup : hash -> linked.agent().principal(hash),
            System::nanoTime);
    List<Integer> others =
        config.frontend().ports().stream().filter(p -> p != connector.getLocalPort()).toList();
    FrontendPeers peers = new FrontendPeers(others, config.hostAgent().secret());
    List<String> frontendIds = config.frontend().ports().stream().map(p -> "fe-" + p).toList();
    ExecutionControl control =
        new ExecutionControl(
            hosts, invoke, kafkaEntry, frontendIds, frontendId, java.time.Clock.systemUTC());
    FrontendMetrics metrics = new FrontendMetrics();
    Routes routes =
        new Routes(
            this::identity,
            hosts,
            invoke,
            auth,
            peers,
            config.hostAgent().secret(),
            control,
            metrics);
    // the GUI's files first (/ui/..., no token), then the API; a refusal first reads the rest of
    // its request's body (up to the largest nginx passes on), so nginx relays it as it is
    server.setHandler(
        new GracefulHandler(
            new RefusedBodies(
                new Handler.Sequence(
                    StaticUi.context(config.frontend().uiDir()), metrics.instrument(routes)),
                AgentProxy.MAX_BODY_BYTES)));
    try {
      server.start();
    } catch (Exception e) {
      close();
      throw new IllegalStateException(
          "frontend: cannot serve on 127.0.0.1:" + requestedPort + ": " + e.getMessage(), e);
    }
    LOG.atInfo()
        .addKeyValue("port", port())
        .addKeyValue("frontend_id", frontendId)
        .addKeyValue("hosts", config.hosts().size())
        .log("frontend listening");
  }

  /** The bound port. */
  public int port() {
    return connector.getLocalPort();
  }

  /** {@code fe-<port>}: names this frontend's reply queue; null before {@link #start}. */
  public String id() {
    return frontendId;
  }

  private Map<String, Object> identity() {
    Map<String, Object> identity = new LinkedHashMap<>();
    identity.put("service", "frontend");
    identity.put("frontend_id", frontendId);
    identity.put("port", port());
    identity.put("pid", ProcessHandle.current().pid());
    return identity;
  }

  private void closeConnector() {
    try {
      connector.close();
    } catch (RuntimeException e) {
      LOG.atWarn().addKeyValue("error", e.toString()).log("closing the connector failed");
    }
  }

  /** Stops gracefully; idempotent; never throws. */
  @Override
  public synchronized void close() {
    // callers still waiting get 202 RUNNING (they can poll) instead of holding up the stop
    pending.abandonAll();
    try {
      server.stop();
      LOG.atInfo().addKeyValue("frontend_id", frontendId).log("frontend stopped");
    } catch (Exception e) {
      LOG.atWarn().addKeyValue("error", e.toString()).log("frontend stop failed");
    }
    if (hosts != null) {
      hosts.close();
      hosts = null;
    }
    if (kafkaEntry != null) {
      kafkaEntry.close();
      kafkaEntry = null;
    }
  }
}
