package dev.sand.bus.redis;

import dev.sand.bus.EventCodec;
import dev.sand.bus.thrift.EventMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A JUnit extension for tests that talk to a real, empty Redis: starts a {@link RedisServer} and
 * connects a {@link RedisLocalBus} once per test class, flushes every key before each test, and
 * stops both after the class. Register it as {@code @RegisterExtension static final LocalRedis
 * REDIS = new LocalRedis();}.
 */
public final class LocalRedis implements BeforeAllCallback, BeforeEachCallback, AfterAllCallback {
  private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);

  private RedisServer server;
  private RedisLocalBus bus;

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    server = RedisServer.start();
    bus = RedisLocalBus.connect(server.socket(), CONNECT_TIMEOUT);
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    bus.call("FLUSHALL", c -> c.flushall());
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    if (bus != null) {
      bus.close();
    }
    if (server != null) {
      server.close();
    }
  }

  /** The connection, as Redis's default user. */
  public RedisLocalBus bus() {
    return bus;
  }

  /** The events waiting in the list {@code queue}, newest first (as pushed with LPUSH). */
  public List<EventMessage> events(String queue) {
    return bus
        .call("LRANGE " + queue, c -> c.lrange(queue.getBytes(StandardCharsets.UTF_8), 0, -1))
        .stream()
        .map(EventCodec::decode)
        .toList();
  }

  /** A new connection (to log in as another user); the caller closes it. */
  public RedisLocalBus connect() {
    return RedisLocalBus.connect(server.socket(), CONNECT_TIMEOUT);
  }
}
