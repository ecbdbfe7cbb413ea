package dev.sand.bridge.kafka;

import dev.sand.bus.EventCodec;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.config.KafkaConfig;
import dev.sand.contracts.Keys;
import dev.sand.contracts.Topics;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Events that reach this host through the global bus (the paper's external path: a frontend
 * publishes an invocation to the entry grain's topic; the host that owns the partition takes it).
 * Consumes every grain topic {@code sand.<app>.<grain>} and hands each event flagged QUEUED to the
 * local bus — a PROCESSING copy to the agent queue first, then the event to the grain's queue —
 * then commits. Backups (flagged PROCESSING or FINISHED) share the topics and are skipped.
 *
 * <p>At-least-once: offsets are committed after the batch is on the local bus. One thread; {@link
 * #close} stops it.
 */
public final class KafkaIngress implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaIngress.class);

  private final KafkaConsumer<String, byte[]> consumer;
  private final Supplier<RedisLocalBus> redis;
  private final String hostId;
  private final Predicate<String> deployed;
  private final Thread thread;
  private volatile boolean running = true;

  /**
   * @param deployed whether an app runs on this host; events of other apps are left to others
   */
  public KafkaIngress(
      KafkaConfig config,
      String hostId,
      Supplier<RedisLocalBus> redis,
      Predicate<String> deployed) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrapServers());
    props.put(ConsumerConfig.GROUP_ID_CONFIG, Topics.HOSTS_GROUP);
    props.put(ConsumerConfig.CLIENT_ID_CONFIG, "sand-ingress-" + hostId);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    // a topic created after start-up is an app deployed after start-up: see it within a second,
    // and read it from its beginning, so an invocation published meanwhile is not skipped
    props.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, 1000);
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    // Kafka's default (500 ms), on purpose: the broker answers a waiting fetch as soon as a
    // record arrives, so the wait is not added to hops through Kafka (measured on a warm
    // stack: hop p50 10.7-11.4 ms at 500 against 10.1-13.6 at 20), while every empty fetch
    // costs CPU: the idle broker used 103 ms/s at 20 ms and 33 ms/s at 500 (decision 0010).
    props.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 500);
    // a dead host's partitions move after this; healthy hosts keep theirs during a rebalance
    props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000);
    props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1000);
    props.put(
        ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
        CooperativeStickyAssignor.class.getName());
    this.consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer());
    this.redis = redis;
    this.hostId = hostId;
    this.deployed = deployed;
    this.thread = new Thread(this::run, "kafka-ingress");
    thread.setDaemon(true);
  }

  /** Starts consuming. */
  public void start() {
    thread.start();
  }

  private void run() {
    try {
      consumer.subscribe(Topics.GRAIN_TOPICS);
      while (running) {
        ConsumerRecords<String, byte[]> records = consumer.poll(Duration.ofMillis(200));
        if (records.isEmpty()) {
          continue;
        }
        RedisLocalBus bus = redis.get();
        if (bus == null) {
          // nothing committed: rewind so the batch is read again once Redis is there
          for (var partition : records.partitions()) {
            consumer.seek(partition, records.records(partition).get(0).offset());
          }
          sleep(200);
          continue;
        }
        for (ConsumerRecord<String, byte[]> record : records) {
          deliver(bus, record);
        }
        consumer.commitSync();
      }
    } catch (WakeupException e) {
      // close() asked us to stop
    } catch (RuntimeException e) {
      LOG.atError().setCause(e).log("kafka ingress stopped");
    } finally {
      consumer.close(CloseOptions.timeout(Duration.ofSeconds(2)));
    }
  }

  private void deliver(RedisLocalBus bus, ConsumerRecord<String, byte[]> record) {
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
    if (event.getFlag() != EventFlag.QUEUED) {
      return;
    }
    if (!deployed.test(event.getApp())) {
      LOG.atWarn()
          .addKeyValue("execution_id", event.getExecution_id())
          .addKeyValue("app", event.getApp())
          .log("event for an app not deployed on this host dropped");
      return;
    }
    bus.push(Keys.agent(hostId), event.deepCopy().setFlag(EventFlag.PROCESSING));
    bus.push(Keys.grain(event.getApp(), event.getTarget_grain()), event);
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Topics this ingress reads, for tests. */
  static List<String> matching(List<String> topics) {
    return topics.stream().filter(t -> Topics.GRAIN_TOPICS.matcher(t).matches()).toList();
  }

  @Override
  public void close() {
    running = false;
    consumer.wakeup();
    try {
      thread.join(3000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
