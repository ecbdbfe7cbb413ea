package dev.sand.agent.triggers;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sand.agent.bus.ConsumerLoop;
import dev.sand.config.KafkaConfig;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A topic trigger on this host (decision 0034): a consumer in group {@code
 * sand-trigger.<app>.<trigger>} (every agent that runs the app is a member; Kafka shares the
 * topic's partitions among them) that starts one execution per record, with the record's value as
 * input. At least once: offsets are committed only once the broker holds the INVOKE events of every
 * record before them; a record whose start failed is read again. A paused trigger pauses its
 * partitions (the group keeps them; the lag grows). New groups start at the end of the topic. One
 * thread; {@link #close} stops it.
 */
final class TopicTrigger implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(TopicTrigger.class);
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final Duration POLL = Duration.ofMillis(500);

  private final TriggerDef def;
  private final Starts starts;
  private final int maxInputBytes;
  private final BiConsumer<TriggerDef, String> skipped;
  private final BiConsumer<TriggerDef, String> started;
  private final ConsumerLoop loop;
  private final KafkaConsumer<String, byte[]> consumer;
  private boolean subscribed; // by the loop's thread
  private final AtomicLong lag = new AtomicLong(-1);
  private volatile boolean paused;

  /**
   * @param maxInputBytes the app's largest input ({@code limits.payload_kb})
   * @param skipped told of each record that starts nothing, with the line for the app's log
   * @param started told of each execution started ({@code (trigger, execution id)})
   */
  TopicTrigger(
      KafkaConfig config,
      String hostId,
      TriggerDef def,
      Starts starts,
      int maxInputBytes,
      BiConsumer<TriggerDef, String> skipped,
      BiConsumer<TriggerDef, String> started) {
    this.def = def;
    this.starts = starts;
    this.maxInputBytes = maxInputBytes;
    this.skipped = skipped;
    this.started = started;
    Properties tuning = new Properties();
    // a new group starts at the topic's end: records from before the deploy start nothing
    tuning.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest");
    tuning.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100);
    // a trigger never makes its topic (the broker may auto-create): deploy checked it exists
    tuning.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false);
    this.loop =
        new ConsumerLoop(
            config,
            new ConsumerLoop.Settings(
                group(def.app(), def.name()),
                "sand-trigger-" + hostId + "-" + def.app() + "-" + def.name(),
                Duration.ofSeconds(10),
                Duration.ofSeconds(3)),
            tuning,
            "trigger-" + def.app() + "-" + def.name());
    this.consumer = loop.consumer();
  }

  /** The consumer group of a topic trigger. */
  static String group(String app, String trigger) {
    return "sand-trigger." + app + "." + trigger;
  }

  TriggerDef def() {
    return def;
  }

  void start() {
    loop.start(
        () -> {
          if (!subscribed) {
            consumer.subscribe(List.of(def.topic()));
            subscribed = true;
          }
          step();
        },
        () -> {});
  }

  /** Pauses or resumes consumption (takes effect at the next poll). */
  void paused(boolean paused) {
    this.paused = paused;
  }

  /** Records of this host's partitions not started yet; -1 before the first poll. */
  long lag() {
    return lag.get();
  }

  private void step() {
    var assigned = consumer.assignment();
    if (paused) {
      consumer.pause(assigned);
    } else {
      consumer.resume(consumer.paused());
    }
    ConsumerRecords<String, byte[]> records = consumer.poll(POLL);
    Map<TopicPartition, Long> firstFailed = new HashMap<>();
    Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
    List<Map.Entry<ConsumerRecord<String, byte[]>, CompletableFuture<Void>>> sent =
        new ArrayList<>();
    long now = System.currentTimeMillis();
    for (ConsumerRecord<String, byte[]> record : records) {
      byte[] input = input(record);
      if (input == null) {
        continue;
      }
      Map<String, Object> trigger = new LinkedHashMap<>();
      trigger.put("name", def.name());
      trigger.put("kind", "topic");
      trigger.put("topic", record.topic());
      trigger.put("partition", record.partition());
      trigger.put("offset", record.offset());
      String id = Starts.newId();
      sent.add(
          Map.entry(
              record,
              starts
                  .start(
                      def,
                      id,
                      Starts.idOf(
                          def.app(),
                          def.name(),
                          record.topic(),
                          "" + record.partition(),
                          "" + record.offset()),
                      null,
                      input,
                      trigger,
                      now)
                  .thenRun(() -> started.accept(def, id))));
    }
    for (var entry : sent) {
      ConsumerRecord<String, byte[]> record = entry.getKey();
      TopicPartition tp = new TopicPartition(record.topic(), record.partition());
      try {
        entry.getValue().get(Starts.DELIVERY_TIMEOUT_MS + 5_000L, TimeUnit.MILLISECONDS);
      } catch (Exception e) {
        if (e instanceof InterruptedException) {
          Thread.currentThread().interrupt();
        }
        firstFailed.merge(tp, record.offset(), Math::min);
      }
    }
    for (ConsumerRecord<String, byte[]> record : records) {
      TopicPartition tp = new TopicPartition(record.topic(), record.partition());
      Long failed = firstFailed.get(tp);
      if (failed == null || record.offset() < failed) {
        commit.put(tp, new OffsetAndMetadata(record.offset() + 1));
      }
    }
    if (!commit.isEmpty()) {
      consumer.commitSync(commit);
    }
    if (!firstFailed.isEmpty()) {
      // read them again: their executions were not started (at least once)
      firstFailed.forEach(consumer::seek);
      LOG.atWarn()
          .addKeyValue("app", def.app())
          .addKeyValue("trigger", def.name())
          .log("records not started; reading them again");
      ConsumerLoop.sleep(1000);
    }
    long total = 0;
    for (TopicPartition tp : consumer.assignment()) {
      total += consumer.currentLag(tp).orElse(0);
    }
    lag.set(total);
  }

  /** The input of {@code record}: its value if it is JSON within the limit; else null (skipped). */
  private byte[] input(ConsumerRecord<String, byte[]> record) {
    byte[] value = record.value();
    String why = null;
    byte[] input = null;
    if (value == null || value.length == 0) {
      why = "has no value";
    } else if (value.length > maxInputBytes) {
      why = "is " + value.length + " bytes, over the app's payload limit of " + maxInputBytes;
    } else {
      try {
        JsonNode parsed = MAPPER.readTree(value);
        input = parsed == null ? null : MAPPER.writeValueAsBytes(parsed);
        if (input == null) {
          why = "is empty";
        }
      } catch (IOException e) {
        why = "is not JSON (" + e.getMessage().lines().findFirst().orElse("") + ")";
      }
    }
    if (why != null) {
      skipped.accept(
          def,
          "trigger "
              + def.name()
              + ": record "
              + record.topic()
              + "/"
              + record.partition()
              + "@"
              + record.offset()
              + " "
              + why
              + ": skipped");
    }
    return input;
  }

  @Override
  public void close() {
    loop.close();
  }
}
