package dev.sand.agent.bus;

import dev.sand.agent.apps.Executions;
import dev.sand.bridge.kafka.KafkaBridge;
import dev.sand.bus.EventCodec;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.config.KafkaConfig;
import dev.sand.contracts.Topics;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This host's part of the global bus (decision 0011; the SAND paper's global message bus). In
 * consumer group {@code sand-hosts}, it reads the partitions Kafka assigns it of the topics of the
 * grains this host runs, and for each partition ({@link PartitionFlags}):
 *
 * <ul>
 *   <li>delivers QUEUED events (a hop from another host, or the Kafka entry path) to the local bus:
 *       a PROCESSING copy to the agent queue, the event to the grain's queue;
 *   <li>tracks every event's flags, wherever it is processed, and commits the partition only up to
 *       its first unfinished event;
 *   <li>replays the unfinished events of incarnations that left the group ({@link Membership}) — a
 *       host that died, or this host's previous run — once it has read the partition up to its end
 *       at assignment ({@link LostWork}), with attempt + 1 — unless their execution has ended since
 *       they were made; at {@value Replayer#MAX_ATTEMPTS} attempts the execution fails with an
 *       error that says why. A replayed timer goes back to {@code sand:timers} with its due time.
 * </ul>
 *
 * <p>Recovery is itself recoverable: replays are backed up (flag PROCESSING, this incarnation)
 * before they run and commits never pass them, so if this host dies while recovering, the next
 * owner replays them again. One thread; {@link #close} stops it.
 */
public final class GlobalBus implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(GlobalBus.class);
  private static final Duration POLL = Duration.ofMillis(200);
  private static final long MEMBERSHIP_REFRESH_MS = 1000;
  // A commit only bounds how much a new owner reads again (flags decide what it replays), and
  // each one is a write on the broker: once a second, not once per poll.
  private static final long COMMIT_INTERVAL_MS = 1000;

  /** What the global bus needs from the rest of the agent. */
  public interface Host {
    /** The grain topics of every app deployed here. */
    Set<String> topics();

    /** Whether {@code app} is deployed here. */
    boolean isDeployed(String app);

    /**
     * When those of {@code executionIds} that have ended ended (blocking, briefly).
     *
     * @throws RuntimeException when it cannot tell
     */
    Map<String, Instant> ended(Set<String> executionIds);
  }

  private final String incarnation;
  private final Supplier<RedisLocalBus> redis;
  private final Supplier<KafkaBridge> kafka;
  private final Host host;
  private final ConsumerLoop loop;
  private final KafkaConsumer<String, byte[]> consumer;
  private final Map<TopicPartition, PartitionFlags> partitions = new HashMap<>();
  private final Membership membership;
  private final LocalDelivery delivery;
  private final LostWork lost;
  private final String hostId;
  private final AtomicLong delivered = new AtomicLong();
  private final AtomicLong unfinished = new AtomicLong();
  private Set<String> subscribed = Set.of();
  private boolean membershipChanged;
  private long lastRefreshMs;
  private long lastCommitMs;

  /**
   * @param incarnation this run of the agent (its PROCESSING records carry it)
   * @param note notes a line in an app's log ({@code (app, line)})
   */
  public GlobalBus(
      KafkaConfig config,
      String hostId,
      String incarnation,
      Supplier<RedisLocalBus> redis,
      Supplier<KafkaBridge> kafka,
      Host host,
      Executions executions,
      BiConsumer<String, String> note) {
    this.hostId = hostId;
    this.incarnation = incarnation;
    this.redis = redis;
    this.kafka = kafka;
    this.host = host;
    this.membership = new Membership(incarnation);
    this.delivery = new LocalDelivery(hostId);
    this.lost = new LostWork(hostId, incarnation, this::deliver, host::ended, executions, note);
    Properties tuning = new Properties();
    // Kafka's default (500 ms), on purpose: the broker answers a waiting fetch as soon as a
    // record arrives, so the wait is not added to hops through Kafka, while every empty fetch
    // costs CPU (decision 0010).
    tuning.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 500);
    // Group membership is the failure detector: a dead host's partitions and work move after
    // the session timeout (the broker's group.min.session.timeout.ms is lowered to allow it).
    // 2 s: about 1 s of every recovery less than 3 s; four heartbeats fit in it, and a live
    // agent that misses them all only causes duplicates (its work is replayed), never a loss.
    this.loop =
        new ConsumerLoop(
            config,
            new ConsumerLoop.Settings(
                Topics.HOSTS_GROUP,
                Membership.clientId(hostId, incarnation),
                Duration.ofSeconds(2),
                Duration.ofMillis(500)),
            tuning,
            "global-bus");
    this.consumer = loop.consumer();
  }

  /** Starts consuming. */
  public void start() {
    loop.start(this::step, this::commit);
  }

  /** Counters for {@code /health}. */
  public Map<String, Long> counters() {
    return Map.of(
        "delivered", delivered.get() + lost.delivered.get(),
        "replayed_after_host_loss", lost.replayed.get(),
        "skipped_ended_after_host_loss", lost.skipped.get(),
        "unfinished_tracked", unfinished.get(),
        "partitions", (long) partitions.size());
  }

  private void step() {
    if (!resubscribe()) {
      ConsumerLoop.sleep(POLL.toMillis());
      return;
    }
    ConsumerRecords<String, byte[]> records = consumer.poll(POLL);
    RedisLocalBus bus = redis.get();
    if (bus == null) {
      rewind(records);
      ConsumerLoop.sleep(200);
      return;
    }
    for (ConsumerRecord<String, byte[]> record : records) {
      read(bus, record);
    }
    recover(bus);
    long now = nowMs();
    if (now - lastCommitMs >= COMMIT_INTERVAL_MS) {
      lastCommitMs = now;
      commit();
    }
  }

  /** Follows deploys and undeploys: subscribes to the topics of the apps deployed here. */
  private boolean resubscribe() {
    Set<String> wanted = host.topics();
    if (!wanted.equals(subscribed)) {
      if (wanted.isEmpty()) {
        consumer.unsubscribe();
        partitions.clear();
      } else {
        KafkaBridge bridge = kafka.get();
        if (bridge != null) {
          bridge.ensureTopics(wanted);
        }
        consumer.subscribe(wanted, new Listener());
      }
      subscribed = Set.copyOf(wanted);
      LOG.atInfo().addKeyValue("topics", subscribed.size()).log("global bus subscription");
    }
    return !subscribed.isEmpty();
  }

  private void read(RedisLocalBus bus, ConsumerRecord<String, byte[]> record) {
    TopicPartition tp = new TopicPartition(record.topic(), record.partition());
    PartitionFlags flags = partitions.get(tp);
    if (flags == null) {
      return; // revoked meanwhile
    }
    EventMessage event;
    try {
      event = EventCodec.decode(record.value());
    } catch (RuntimeException e) {
      LOG.atWarn()
          .addKeyValue("topic", record.topic())
          .addKeyValue("offset", record.offset())
          .addKeyValue("error", e.toString())
          .log("undecodable record skipped");
      return;
    }
    Header header = record.headers().lastHeader(Topics.INCARNATION_HEADER);
    String by = header == null ? "" : new String(header.value(), StandardCharsets.UTF_8);
    if (flags.read(record.offset(), event, by, incarnation, nowMs())) {
      deliver(bus, event, false);
      delivered.incrementAndGet();
    }
  }

  /** {@link LocalDelivery#deliver}, for an app deployed here; others are left to other hosts. */
  private void deliver(RedisLocalBus bus, EventMessage event, boolean ahead) {
    if (!host.isDeployed(event.getApp())) {
      LOG.atWarn()
          .addKeyValue("execution_id", event.getExecution_id())
          .addKeyValue("app", event.getApp())
          .log("event for an app not deployed on this host left to others");
      return;
    }
    delivery.deliver(bus, event, ahead);
  }

  /** Replays the work of dead incarnations in every caught-up partition. */
  private void recover(RedisLocalBus bus) {
    long now = nowMs();
    long tracked = 0;
    boolean candidates = false;
    for (PartitionFlags flags : partitions.values()) {
      tracked += flags.unfinishedCount();
      candidates |= flags.unfinishedCount() > 0;
    }
    unfinished.set(tracked);
    // Learn the members even while nothing here is unfinished: an incarnation this host never
    // saw alive counts as dead only after a grace of 10 s, so a host that dies before we
    // looked would have its work wait that long (most events never reach the broker, so
    // there often is nothing unfinished until the moment a host dies: decision 0014).
    KafkaBridge bridge = kafka.get();
    if (bridge != null && (membershipChanged || now - lastRefreshMs >= MEMBERSHIP_REFRESH_MS)) {
      lastRefreshMs = now;
      if (membership.refresh(bridge.admin(), 2000)) {
        membershipChanged = false;
      }
    }
    if (!candidates) {
      return;
    }
    List<LostWork.Orphan> orphans = new ArrayList<>();
    for (PartitionFlags flags : partitions.values()) {
      for (PartitionFlags.Unfinished orphan : flags.orphans(u -> membership.dead(u, now))) {
        // an app not deployed here (yet, or any more) is not ours to run
        if (host.isDeployed(orphan.event().getApp())) {
          orphans.add(new LostWork.Orphan(flags, orphan));
        }
      }
    }
    if (!orphans.isEmpty()) {
      lost.takeOver(bus, orphans);
    }
  }

  private void commit() {
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    partitions.forEach(
        (tp, flags) -> {
          long offset = flags.toCommit();
          if (offset >= 0) {
            offsets.put(tp, new OffsetAndMetadata(offset));
          }
        });
    if (!offsets.isEmpty()) {
      // the callback runs on this thread, inside a later poll
      consumer.commitAsync(
          offsets,
          (done, error) ->
              offsets.forEach(
                  (tp, offset) -> {
                    PartitionFlags flags = partitions.get(tp);
                    if (flags != null) {
                      flags.committed(offset.offset(), error == null);
                    }
                  }));
    }
  }

  private void rewind(ConsumerRecords<String, byte[]> records) {
    for (TopicPartition tp : records.partitions()) {
      consumer.seek(tp, records.records(tp).get(0).offset());
    }
  }

  /** Partition moves: new partitions are read from their committed offset. */
  private final class Listener implements ConsumerRebalanceListener {
    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
      if (assigned.isEmpty()) {
        membershipChanged = true;
        return;
      }
      Map<TopicPartition, Long> ends = consumer.endOffsets(assigned);
      for (TopicPartition tp : assigned) {
        long position = consumer.position(tp);
        partitions.put(tp, new PartitionFlags(position, ends.getOrDefault(tp, position)));
      }
      membershipChanged = true;
      LOG.atInfo().addKeyValue("partitions", assigned.toString()).log("partitions assigned");
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
      Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
      for (TopicPartition tp : revoked) {
        PartitionFlags flags = partitions.remove(tp);
        if (flags != null) {
          offsets.put(tp, new OffsetAndMetadata(flags.committable()));
        }
      }
      if (!offsets.isEmpty()) {
        try {
          consumer.commitSync(offsets);
        } catch (RuntimeException e) {
          LOG.atWarn().addKeyValue("error", e.toString()).log("commit on revocation failed");
        }
      }
      membershipChanged = true;
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> lost) {
      lost.forEach(partitions::remove);
      membershipChanged = true;
    }
  }

  private static long nowMs() {
    return System.nanoTime() / 1_000_000;
  }

  /** The grain topics of {@code grainsByApp}. */
  public static Set<String> topicsOf(Map<String, List<String>> grainsByApp) {
    Set<String> topics = new java.util.TreeSet<>();
    grainsByApp.forEach((app, grains) -> grains.forEach(g -> topics.add(Topics.grain(app, g))));
    return topics;
  }

  @Override
  public void close() {
    loop.close();
  }
}
