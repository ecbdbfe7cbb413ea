package dev.sand.frontend;

import dev.sand.config.ClusterConfig;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.GracefulHandler;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One frontend process: the HTTP entry of SAND on one port, wired from a {@link ClusterConfig}.
 *
 * <p>Lifecycle: {@link #create} (no I/O) → {@link #start} (binds the port) → {@link #close}
 * (graceful: in-flight requests finish, up to 5 s). Thread-safe.
 */
public final class Frontend implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Frontend.class);
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(5);

  private final int requestedPort;
  private final Server server;
  private final ServerConnector connector;

  private Frontend(ClusterConfig config, int port) {
    this.requestedPort = port;
    // bounded pool: invocations will wait on results, but a frontend must not grow without limit
    QueuedThreadPool threads = new QueuedThreadPool(64, 4);
    threads.setName("http");
    server = new Server(threads);
    connector = new ServerConnector(server, 1, 1);
    // nginx on the same host is the only client; the management API has no authentication yet
    connector.setHost("127.0.0.1");
    connector.setPort(port);
    server.addConnector(connector);
    server.setHandler(new GracefulHandler(new Routes(this::identity, config)));
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
    return new Frontend(config, port);
  }

  /**
   * Binds the port and starts serving.
   *
   * @throws IllegalStateException naming the port when it cannot be bound
   */
  public void start() {
    try {
      server.start();
    } catch (Exception e) {
      throw new IllegalStateException(
          "frontend: cannot listen on 127.0.0.1:" + requestedPort + ": " + e.getMessage(), e);
    }
    LOG.atInfo().addKeyValue("port", port()).log("frontend listening");
  }

  /** The bound port. */
  public int port() {
    return connector.getLocalPort();
  }

  private Map<String, Object> identity() {
    Map<String, Object> identity = new LinkedHashMap<>();
    identity.put("service", "frontend");
    identity.put("port", port());
    identity.put("pid", ProcessHandle.current().pid());
    return identity;
  }

  /** Stops gracefully; idempotent; never throws. */
  @Override
  public void close() {
    try {
      server.stop();
      LOG.atInfo().addKeyValue("port", requestedPort).log("frontend stopped");
    } catch (Exception e) {
      LOG.atWarn().addKeyValue("error", e.toString()).log("frontend stop failed");
    }
  }
}
