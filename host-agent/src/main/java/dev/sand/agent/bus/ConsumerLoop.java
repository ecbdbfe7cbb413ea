package dev.sand.agent.bus;

import dev.sand.config.KafkaConfig;
import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One thread that runs one step of a Kafka consumer's work at a time until closed, the agent's
 * consumers' common shape ({@link GlobalBus}, {@link BatchRecorder}, topic triggers): manual
 * commits, from the earliest offset, cooperative rebalancing (healthy members keep their partitions
 * while a dead one's move). A step that throws is logged and tried again half a second later —
 * Redis, Kafka or Cassandra away, a rebalance refusing a commit: each step commits only what it
 * handled, so going on loses nothing.
 */
public final class ConsumerLoop implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ConsumerLoop.class);

  /** What a consumer is: its group, its name, how fast a dead member is noticed. */
  public record Settings(
      String group, String clientId, Duration sessionTimeout, Duration heartbeat) {}

  private final KafkaConsumer<String, byte[]> consumer;
  private final Thread thread;
  private volatile boolean running = true;
  private Runnable step = () -> {};
  private Runnable onStop = () -> {};

  /**
   * @param tuning further consumer properties (fetch sizes and waits)
   */
  public ConsumerLoop(KafkaConfig config, Settings settings, Properties tuning, String threadName) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrapServers());
    props.put(ConsumerConfig.GROUP_ID_CONFIG, settings.group());
    props.put(ConsumerConfig.CLIENT_ID_CONFIG, settings.clientId());
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, (int) settings.sessionTimeout().toMillis());
    props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, (int) settings.heartbeat().toMillis());
    props.put(
        ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
        CooperativeStickyAssignor.class.getName());
    props.putAll(tuning);
    this.consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer());
    this.thread = new Thread(this::run, threadName);
    thread.setDaemon(true);
  }

  /** The consumer, for the steps (used by the loop's thread only). */
  public KafkaConsumer<String, byte[]> consumer() {
    return consumer;
  }

  /** Starts running {@code work} over and over; {@code last} runs once when stopping. */
  public void start(Runnable work, Runnable last) {
    this.step = work;
    this.onStop = last;
    thread.start();
  }

  private void run() {
    try {
      while (running) {
        try {
          step.run();
        } catch (WakeupException e) {
          throw e;
        } catch (RuntimeException e) {
          LOG.atWarn()
              .addKeyValue("thread", thread.getName())
              .addKeyValue("error", e.toString())
              .log("consumer step failed; retrying");
          sleep(500);
        }
      }
    } catch (WakeupException e) {
      // close() asked us to stop
    } finally {
      try {
        onStop.run();
      } catch (RuntimeException e) {
        LOG.atWarn().addKeyValue("error", e.toString()).log("last step failed");
      }
      consumer.close(CloseOptions.timeout(Duration.ofSeconds(2)));
    }
  }

  public static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
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
