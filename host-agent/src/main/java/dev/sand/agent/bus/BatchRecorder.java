package dev.sand.agent.bus;

import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import dev.sand.config.KafkaConfig;
import dev.sand.store.cassandra.CassandraStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records topics in Cassandra, in one consumer group: whichever hosts are alive share the
 * partitions, and offsets are committed only after Cassandra took the batch, so what a host
 * produced is recorded even when it died right after. {@link ExecutionRecorder} says how a record
 * is read and stored.
 *
 * <p>Batches are what one poll returns (Kafka gathers up to {@code fetch.max.wait.ms}): Cassandra's
 * CPU is per request more than per row. A batch Cassandra did not take is read again from its first
 * offset a second later; a rebalance that refuses a commit leaves the batch to be read and recorded
 * again — every write is an upsert. A batch Cassandra refuses outright (an invalid query) is
 * skipped and counted: retrying would stop every later record. One thread; {@link #close} stops it.
 *
 * @param <T> what one Kafka record becomes
 */
final class BatchRecorder<T> implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(BatchRecorder.class);
  private static final long STORE_TIMEOUT_MS = 10_000;

  /** Stores a batch; the stage completes when Cassandra took it. */
  interface Store<T> {
    CompletionStage<Void> store(CassandraStore cassandra, List<T> batch);
  }

  /**
   * What is recorded and how.
   *
   * @param topics the topics consumed
   * @param group their consumer group
   * @param what what a record is, for thread names and logs ({@code execution})
   * @param read a record as the items to store (none for a record to ignore)
   * @param store writes a batch of items
   */
  record Recording<T>(
      List<String> topics,
      String group,
      String what,
      Function<ConsumerRecord<String, byte[]>, List<T>> read,
      Store<T> store) {}

  private final Recording<T> recording;
  private final ConsumerLoop loop;
  private final KafkaConsumer<String, byte[]> consumer;
  private final Supplier<CassandraStore> cassandra;
  private final AtomicLong recorded = new AtomicLong();
  private final AtomicLong recordErrors = new AtomicLong();

  BatchRecorder(
      KafkaConfig config,
      String clientId,
      Supplier<CassandraStore> cassandra,
      Recording<T> recording) {
    Properties tuning = new Properties();
    // records are off every path: wait for a fuller fetch, and spend less CPU on empty ones (an
    // idle stack's broker answers two empty fetches a second here; a record is in Cassandra at
    // most ~0.5 s after it was published)
    tuning.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 500);
    tuning.put(ConsumerConfig.FETCH_MIN_BYTES_CONFIG, 16 * 1024);
    this.recording = recording;
    this.loop =
        new ConsumerLoop(
            config,
            new ConsumerLoop.Settings(
                recording.group(), clientId, Duration.ofSeconds(6), Duration.ofSeconds(1)),
            tuning,
            recording.what() + "-recorder");
    this.consumer = loop.consumer();
    this.cassandra = cassandra;
  }

  /** Starts consuming. */
  void start() {
    consumer.subscribe(recording.topics());
    loop.start(this::recordOnce, () -> {});
  }

  /**
   * Counters for {@code /health}: records recorded, and records Cassandra refused or did not take.
   */
  Map<String, Long> counters() {
    return Map.of("recorded", recorded.get(), "record_errors", recordErrors.get());
  }

  private void recordOnce() {
    ConsumerRecords<String, byte[]> records = consumer.poll(Duration.ofMillis(500));
    if (records.isEmpty()) {
      return;
    }
    List<T> batch = new ArrayList<>();
    for (ConsumerRecord<String, byte[]> record : records) {
      batch.addAll(recording.read().apply(record));
    }
    if (store(batch)) {
      consumer.commitSync();
      recorded.addAndGet(batch.size());
    } else {
      for (TopicPartition tp : records.partitions()) {
        consumer.seek(tp, records.records(tp).get(0).offset());
      }
      ConsumerLoop.sleep(1000);
    }
  }

  private boolean store(List<T> batch) {
    if (batch.isEmpty()) {
      return true;
    }
    CassandraStore store = cassandra.get();
    if (store == null) {
      return false;
    }
    try {
      recording
          .store()
          .store(store, batch)
          .toCompletableFuture()
          .get(STORE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
      return true;
    } catch (ExecutionException e) {
      if (e.getCause() instanceof InvalidQueryException invalid) {
        LOG.atError()
            .addKeyValue("what", recording.what())
            .addKeyValue("records", batch.size())
            .addKeyValue("error", invalid.getMessage())
            .log("records refused by cassandra; skipped");
        recordErrors.addAndGet(batch.size());
        return true;
      }
      return retryLater(batch, e);
    } catch (Exception e) {
      return retryLater(batch, e);
    }
  }

  private boolean retryLater(List<T> batch, Exception e) {
    if (e instanceof InterruptedException) {
      Thread.currentThread().interrupt();
    }
    if (recordErrors.getAndAdd(batch.size()) % 100 == 0) {
      LOG.atWarn()
          .addKeyValue("what", recording.what())
          .addKeyValue("records", batch.size())
          .addKeyValue("error", e.toString())
          .log("records not stored in cassandra; trying again");
    }
    return false;
  }

  @Override
  public void close() {
    loop.close();
  }
}
