package dev.sand.frontend;

import dev.sand.bus.redis.LocalBusException;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.config.HostEntry;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This frontend's links to every host of the cluster ({@code hosts} of the config): per host, its
 * local bus (Redis), a reply dispatcher for this frontend's synchronous callers (an execution ends
 * on whichever host ran its last grain), an app catalog, an invoker (with this frontend's view of
 * the host's backlog, for admission control) and its agent's address.
 *
 * <p>A host whose Redis is not there when the frontend starts is connected later, by a background
 * thread, once it appears; one whose Redis dies fails calls at once (commands are rejected while
 * disconnected) and is reconnected by the Redis client. Invocations go to the hosts that run the
 * app, in the app's turn, skipping hosts that fail. Thread-safe.
 */
final class HostLinks implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HostLinks.class);
  private static final Duration RETRY = Duration.ofSeconds(1);
  private static final Duration SUSPECT = Duration.ofSeconds(1);

  /** One host as this frontend reaches it; the fields are null until its Redis connected. */
  static final class Link {
    final HostEntry host;
    final AgentProxy agent;
    volatile RedisLocalBus bus;
    volatile AppCatalog catalog;
    volatile Invoker invoker;
    volatile ReplyDispatcher dispatcher;
    private volatile long suspectUntilNanos;

    Link(HostEntry host, String agentSecret) {
      this.host = host;
      this.agent = new AgentProxy(host.agentUrl(), agentSecret);
    }

    boolean connected() {
      return bus != null;
    }

    /** Takes this host out of the rotation for a second: a call to it just failed. */
    void suspect() {
      suspectUntilNanos = System.nanoTime() + SUSPECT.toNanos();
    }

    boolean usable() {
      return bus != null && System.nanoTime() - suspectUntilNanos >= 0;
    }
  }

  /** A host that runs the app, and what it answered about it. */
  record Target(Link link, AppMetadata app) {}

  private final List<Link> links = new ArrayList<>();
  private final String redisPassword;
  private final String frontendId;
  private final PendingReplies pending;
  private final KafkaEntry kafka;
  private final Admission admission;
  // queues asynchronous invocations once their backup is acknowledged (off Kafka's thread)
  private final ExecutorService afterAck =
      Executors.newFixedThreadPool(
          2,
          task -> {
            Thread thread = new Thread(task, "after-ack");
            thread.setDaemon(true);
            return thread;
          });
  // per app: where its next call's round robin starts (see inTurn)
  private final ConcurrentHashMap<String, AtomicInteger> turns = new ConcurrentHashMap<>();
  private final Thread connector;
  private volatile boolean running = true;

  /**
   * Connects to every host it can now; the others are retried every second.
   *
   * @throws IllegalStateException naming the socket when the cluster has one host and its Redis
   *     cannot be reached (a single-host frontend cannot serve anything without it)
   */
  HostLinks(
      List<HostEntry> hosts,
      String redisPassword,
      String agentSecret,
      String frontendId,
      PendingReplies pending,
      KafkaEntry kafka,
      Admission admission) {
    this.redisPassword = redisPassword;
    this.admission = admission;
    this.frontendId = frontendId;
    this.pending = pending;
    this.kafka = kafka;
    for (HostEntry host : hosts) {
      Link link = new Link(host, agentSecret);
      links.add(link);
      try {
        connect(link);
      } catch (LocalBusException e) {
        if (hosts.size() == 1) {
          throw new IllegalStateException("frontend " + frontendId + ": " + e.getMessage(), e);
        }
        LOG.atWarn()
            .addKeyValue("host_id", host.id())
            .addKeyValue("error", e.getMessage())
            .log("host not reachable yet; retrying");
      }
    }
    connector = new Thread(this::connectLoop, "host-links");
    connector.setDaemon(true);
    connector.start();
  }

  private void connect(Link link) {
    RedisLocalBus bus =
        RedisLocalBus.connect(link.host.redisSocket(), redisPassword, Duration.ofSeconds(5));
    link.catalog = new AppCatalog(bus, System::nanoTime);
    link.invoker =
        new Invoker(
            bus,
            link.host.id(),
            frontendId,
            Clock.systemUTC(),
            kafka,
            admission.host(link.host.id()),
            afterAck);
    link.dispatcher = ReplyDispatcher.start(bus, frontendId, pending);
    link.bus = bus;
    LOG.atInfo().addKeyValue("host_id", link.host.id()).log("host linked");
  }

  private void connectLoop() {
    while (running) {
      for (Link link : links) {
        if (!link.connected()) {
          try {
            connect(link);
          } catch (LocalBusException e) {
            // still away
          }
        }
      }
      try {
        Thread.sleep(RETRY.toMillis());
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** How many hosts the cluster has. */
  int size() {
    return links.size();
  }

  /** Every host, in config order. */
  List<Link> all() {
    return List.copyOf(links);
  }

  /**
   * The first answer of {@code ask} over the connected hosts in config order (lookups: which host
   * answers does not matter), skipping hosts whose Redis fails; empty when no host has one.
   *
   * @throws LocalBusException the last host's error when every host failed
   */
  <T> Optional<T> first(Function<Link, Optional<T>> ask) {
    return first(usable(0), ask);
  }

  /**
   * As {@link #first}, over the hosts in {@code app}'s turn: each call for an app starts at the
   * host after the one its previous call started at (round robin). Each app has its own turn, so
   * neither lookups nor other apps' calls decide where an app's calls go: with one shared counter,
   * a status poll between two calls sent both to the same host of two. A turn is kept only for an
   * app some host answered for, so unknown names leave nothing behind.
   */
  <T> Optional<T> inTurn(String app, Function<Link, Optional<T>> ask) {
    AtomicInteger turn = turns.get(app);
    Optional<T> found = first(usable(turn == null ? 0 : turn.getAndIncrement()), ask);
    if (turn == null && found.isPresent()) {
      turns.putIfAbsent(app, new AtomicInteger(1));
    }
    return found;
  }

  /** The connected hosts not suspected, from the {@code start}-th (modulo their number) on. */
  private List<Link> usable(int start) {
    int from = Math.floorMod(start, links.size());
    List<Link> order = new ArrayList<>();
    for (int i = 0; i < links.size(); i++) {
      Link link = links.get((from + i) % links.size());
      if (link.usable()) {
        order.add(link);
      }
    }
    return order;
  }

  private static <T> Optional<T> first(List<Link> order, Function<Link, Optional<T>> ask) {
    LocalBusException last = null;
    boolean anyAnswered = false;
    for (Link link : order) {
      try {
        Optional<T> found = ask.apply(link);
        anyAnswered = true;
        if (found.isPresent()) {
          return found;
        }
      } catch (LocalBusException e) {
        link.suspect();
        last = e;
      }
    }
    if (!anyAnswered && last != null) {
      throw last;
    }
    if (!anyAnswered) {
      throw new LocalBusException("no host of the cluster is reachable", null);
    }
    return Optional.empty();
  }

  /** The agent of the first connected host (management calls), else the first host's. */
  AgentProxy agent() {
    for (Link link : links) {
      if (link.connected()) {
        try {
          link.bus.ping();
          return link.agent;
        } catch (LocalBusException e) {
          // this host is away: the next one
        }
      }
    }
    return links.get(0).agent;
  }

  @Override
  public void close() {
    running = false;
    connector.interrupt();
    afterAck.shutdown();
    for (Link link : links) {
      ReplyDispatcher dispatcher = link.dispatcher;
      if (dispatcher != null) {
        dispatcher.close();
      }
      RedisLocalBus bus = link.bus;
      if (bus != null) {
        bus.close();
      }
    }
  }
}
