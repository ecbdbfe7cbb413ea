package dev.sand.agent;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link Dependency} around one client object {@code T} (a Redis connection, a Kafka admin
 * client, a Cassandra session, a Docker client): connect once, prepare until it succeeds, ping.
 *
 * @param <T> the client type
 */
final class Backend<T extends AutoCloseable> implements Dependency {
  private static final Logger LOG = LoggerFactory.getLogger(Backend.class);

  /** Makes the client; may block and fail. */
  interface Connect<T> {
    T connect() throws Exception;
  }

  /** Runs a step on the client and describes the result. */
  interface Step<T> {
    String run(T client) throws Exception;
  }

  private final String name;
  private final Connect<T> connect;
  private final Step<T> prepare;
  private final Step<T> ping;
  private volatile T client;

  /**
   * @param prepare run once after connecting, repeated until it succeeds (schema, topics, clean-up)
   * @param ping a cheap liveness check
   */
  Backend(String name, Connect<T> connect, Step<T> prepare, Step<T> ping) {
    this.name = name;
    this.connect = connect;
    this.prepare = prepare;
    this.ping = ping;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String open() throws Exception {
    if (client == null) {
      client = connect.connect();
    }
    return prepare.run(client);
  }

  @Override
  public String ping() throws Exception {
    T current = client;
    if (current == null) {
      throw new IllegalStateException(name + " is not connected");
    }
    return ping.run(current);
  }

  /** The connected client, or null before {@link #open} first connected. */
  T client() {
    return client;
  }

  @Override
  public void close() {
    T current = client;
    client = null;
    if (current != null) {
      try {
        current.close();
      } catch (Exception e) {
        LOG.atWarn()
            .addKeyValue("dependency", name)
            .addKeyValue("error", e.toString())
            .log("close failed");
      }
    }
  }
}
