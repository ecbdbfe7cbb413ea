package dev.sand.bus.redis;

import dev.sand.bus.EventCodec;
import dev.sand.bus.thrift.EventMessage;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScoredValue;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The host's local bus: one Redis reached over a unix socket. Queue names come from {@link
 * dev.sand.contracts.Keys}; values are {@link EventCodec}-encoded events.
 *
 * <p>Thread-safe: one multiplexed connection serves all callers. Lettuce reconnects on its own
 * after the server comes back; while it is away, commands fail at once with {@link
 * LocalBusException} instead of queueing, so callers (and {@code /health}) see the outage.
 */
public final class RedisLocalBus implements AutoCloseable {
  private final Path socket;
  private final String password;
  private final ClientResources resources;
  private final RedisClient client;
  private final StatefulRedisConnection<byte[], byte[]> connection;

  private RedisLocalBus(
      Path socket,
      String password,
      ClientResources resources,
      RedisClient client,
      StatefulRedisConnection<byte[], byte[]> connection) {
    this.socket = socket;
    this.password = password;
    this.resources = resources;
    this.client = client;
    this.connection = connection;
  }

  /**
   * Connects to the Redis listening on {@code socket}. Blocks up to {@code timeout}.
   *
   * @throws LocalBusException naming the socket when Redis is not reachable
   */
  public static RedisLocalBus connect(Path socket, Duration timeout) {
    return connect(socket, "", timeout);
  }

  /**
   * Connects to the Redis listening on {@code socket} as its default user, with {@code password}
   * unless it is empty. Blocks up to {@code timeout}.
   *
   * @throws LocalBusException naming the socket when Redis is not reachable or refuses the login
   */
  public static RedisLocalBus connect(Path socket, String password, Duration timeout) {
    // two I/O threads are plenty for one connection and keep the agent lean on small hosts.
    // Reconnects back off to 1 s at most, not Lettuce's 30 s: a host's Redis that was down for
    // half a minute (its host killed, then started again) would otherwise wait up to 30 s more
    // for a frontend to send it work again; a reconnect over a unix socket costs next to nothing.
    ClientResources resources =
        DefaultClientResources.builder()
            .ioThreadPoolSize(2)
            .computationThreadPoolSize(1)
            .reconnectDelay(
                Delay.exponential(
                    Duration.ofMillis(10), Duration.ofSeconds(1), 2, TimeUnit.MILLISECONDS))
            .build();
    RedisClient client = RedisClient.create(resources);
    client.setOptions(
        ClientOptions.builder()
            .autoReconnect(true)
            .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
            .build());
    RedisURI uri = uri(socket, password, timeout);
    try {
      return new RedisLocalBus(
          socket, password, resources, client, client.connect(ByteArrayCodec.INSTANCE, uri));
    } catch (RedisException e) {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      resources.shutdown();
      throw new LocalBusException("redis at unix socket " + socket + ": " + rootMessage(e), e);
    }
  }

  /**
   * Checks the connection with {@code PING}. Blocks up to the connect timeout.
   *
   * @throws LocalBusException when Redis does not answer
   */
  public void ping() {
    try {
      String reply = connection.sync().ping();
      if (!"PONG".equals(reply)) {
        throw new LocalBusException("redis at " + socket + ": PING answered " + reply, null);
      }
    } catch (RedisException e) {
      throw new LocalBusException("redis at " + socket + ": " + rootMessage(e), e);
    }
  }

  /**
   * Appends {@code event} to the FIFO {@code queue} (LPUSH; consumers BRPOP). Blocks until Redis
   * acknowledged.
   *
   * @throws LocalBusException when Redis refuses or is unreachable
   */
  public void push(String queue, EventMessage event) {
    try {
      connection.sync().lpush(queue.getBytes(StandardCharsets.UTF_8), EventCodec.encode(event));
    } catch (RedisException e) {
      throw new LocalBusException(
          "redis at " + socket + ": LPUSH " + queue + " failed: " + rootMessage(e), e);
    }
  }

  /**
   * Puts {@code event} at the head of the FIFO {@code queue} (RPUSH; consumers BRPOP): it is taken
   * before everything already queued. Blocks until Redis acknowledged.
   *
   * @throws LocalBusException when Redis refuses or is unreachable
   */
  public void pushFirst(String queue, EventMessage event) {
    call("RPUSH " + queue, c -> c.rpush(bytes(queue), EventCodec.encode(event)));
  }

  /**
   * Appends raw bytes to {@code queue} (LPUSH). Blocks until Redis acknowledged.
   *
   * @throws LocalBusException when Redis refuses or is unreachable
   */
  public void pushRaw(String queue, byte[] value) {
    call("LPUSH " + queue, c -> c.lpush(bytes(queue), value));
  }

  /** The value at {@code key}, or empty when there is none. */
  public Optional<byte[]> get(String key) {
    return Optional.ofNullable(call("GET " + key, c -> c.get(bytes(key))));
  }

  /** Sets {@code key} to {@code value}, expiring after {@code ttl} (none when {@code null}). */
  public void set(String key, byte[] value, Duration ttl) {
    call(
        "SET " + key,
        c ->
            ttl == null
                ? c.set(bytes(key), value)
                : c.set(bytes(key), value, SetArgs.Builder.px(ttl.toMillis())));
  }

  /** Deletes {@code keys}; returns how many existed. */
  public long delete(String... keys) {
    byte[][] raw = new byte[keys.length][];
    for (int i = 0; i < keys.length; i++) {
      raw[i] = bytes(keys[i]);
    }
    return keys.length == 0 ? 0 : call("DEL", c -> c.del(raw));
  }

  /**
   * Runs {@code command} on the shared connection, translating Redis failures.
   *
   * @throws LocalBusException naming {@code what} when Redis refuses or is unreachable
   */
  public <T> T call(String what, Function<RedisCommands<byte[], byte[]>, T> command) {
    try {
      return command.apply(connection.sync());
    } catch (RedisException e) {
      throw new LocalBusException(
          "redis at " + socket + ": " + what + " failed: " + rootMessage(e), e);
    }
  }

  /**
   * A dedicated connection for blocking pops (BRPOP would stall every other command on the shared
   * one). The caller owns it and must close it; one thread at a time.
   */
  public Taker taker() {
    RedisURI uri = uri(socket, password, Duration.ofMinutes(5));
    try {
      return new Taker(client.connect(ByteArrayCodec.INSTANCE, uri));
    } catch (RedisException e) {
      throw new LocalBusException("redis at unix socket " + socket + ": " + rootMessage(e), e);
    }
  }

  /** A connection that takes from queues with BRPOP. Not thread-safe; close it when done. */
  public final class Taker implements AutoCloseable {
    private final StatefulRedisConnection<byte[], byte[]> own;

    private Taker(StatefulRedisConnection<byte[], byte[]> own) {
      this.own = own;
    }

    /**
     * Takes the oldest value of {@code queue}, waiting up to {@code timeout} (whole seconds or a
     * fraction; Redis 6+); empty when none arrived.
     *
     * @throws LocalBusException when Redis is unreachable
     */
    public Optional<byte[]> take(String queue, Duration timeout) {
      try {
        KeyValue<byte[], byte[]> item = own.sync().brpop(timeout.toMillis() / 1000.0, bytes(queue));
        return item == null || !item.hasValue() ? Optional.empty() : Optional.of(item.getValue());
      } catch (RedisException e) {
        throw new LocalBusException(
            "redis at " + socket + ": BRPOP " + queue + " failed: " + rootMessage(e), e);
      }
    }

    /**
     * Takes the oldest value of the first of {@code queues} that has one, waiting up to {@code
     * timeout}; empty when none arrived. The answer names the queue it came from.
     *
     * @throws LocalBusException when Redis is unreachable
     */
    public Optional<Taken> takeAny(List<String> queues, Duration timeout) {
      byte[][] keys = queues.stream().map(RedisLocalBus::bytes).toArray(byte[][]::new);
      try {
        KeyValue<byte[], byte[]> item = own.sync().brpop(timeout.toMillis() / 1000.0, keys);
        return item == null || !item.hasValue()
            ? Optional.empty()
            : Optional.of(
                new Taken(new String(item.getKey(), StandardCharsets.UTF_8), item.getValue()));
      } catch (RedisException e) {
        throw new LocalBusException(
            "redis at " + socket + ": BRPOP " + queues + " failed: " + rootMessage(e), e);
      }
    }

    /**
     * Takes the member of sorted set {@code key} with the lowest score, waiting up to {@code
     * timeout} for the set to have one (BZPOPMIN: the wait ends at the first ZADD); empty when none
     * arrived. The member is removed: the caller owns it.
     *
     * @throws LocalBusException when Redis is unreachable
     */
    public Optional<Scored> takeLowest(String key, Duration timeout) {
      try {
        KeyValue<byte[], ScoredValue<byte[]>> item =
            own.sync().bzpopmin(timeout.toMillis() / 1000.0, bytes(key));
        return item == null || !item.hasValue() || !item.getValue().hasValue()
            ? Optional.empty()
            : Optional.of(new Scored(item.getValue().getValue(), item.getValue().getScore()));
      } catch (RedisException e) {
        throw new LocalBusException(
            "redis at " + socket + ": BZPOPMIN " + key + " failed: " + rootMessage(e), e);
      }
    }

    @Override
    public void close() {
      own.close();
    }
  }

  /** A member taken from a sorted set, with its score. */
  public record Scored(byte[] value, double score) {}

  /** A value taken from {@code queue}. */
  public record Taken(String queue, byte[] value) {}

  private static RedisURI uri(Path socket, String password, Duration timeout) {
    RedisURI.Builder builder = RedisURI.Builder.socket(socket.toString()).withTimeout(timeout);
    if (!password.isEmpty()) {
      builder.withPassword(password.toCharArray());
    }
    return builder.build();
  }

  private static byte[] bytes(String key) {
    return key.getBytes(StandardCharsets.UTF_8);
  }

  /** The Redis server version, for logs. */
  public String serverVersion() {
    try {
      String info = connection.sync().info("server");
      for (String line : info.split("\r?\n")) {
        if (line.startsWith("redis_version:")) {
          return line.substring("redis_version:".length()).trim();
        }
      }
      return "unknown";
    } catch (RedisException e) {
      throw new LocalBusException("redis at " + socket + ": " + rootMessage(e), e);
    }
  }

  /** Closes the connection and releases the client's threads. Blocks up to about a second. */
  @Override
  public void close() {
    connection.close();
    client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    resources.shutdown();
  }

  private static String rootMessage(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root == e ? String.valueOf(e.getMessage()) : e.getMessage() + " (" + root + ")";
  }
}
