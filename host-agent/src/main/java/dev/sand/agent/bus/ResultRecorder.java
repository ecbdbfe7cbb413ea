package dev.sand.agent.bus;

import dev.sand.bus.EventCodec;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.config.KafkaConfig;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.ResultDocument;
import dev.sand.contracts.Topics;
import dev.sand.store.ExecutionRecord;
import dev.sand.store.cassandra.CassandraStore;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records every execution's end in Cassandra ({@code sand.executions}) from the results topic, in
 * consumer group {@code sand-results}: whichever hosts are alive share the partitions, and offsets
 * are committed only after Cassandra took the batch, so a result is recorded even when the host
 * that produced it died right after (Redis keeps a result for an hour; Cassandra keeps it).
 *
 * <p>Batches are what one poll returns (Kafka gathers up to {@code fetch.max.wait.ms}): Cassandra's
 * CPU is per request more than per row. A rebalance that refuses a commit leaves the batch to be
 * read and recorded again (an upsert). One thread; {@link #close} stops it.
 */
public final class ResultRecorder implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ResultRecorder.class);
  private static final long STORE_TIMEOUT_MS = 10_000;

  private final ConsumerLoop loop;
  private final KafkaConsumer<String, byte[]> consumer;
  private final Supplier<CassandraStore> cassandra;
  private final AtomicLong recorded = new AtomicLong();
  private final AtomicLong recordErrors = new AtomicLong();

  public ResultRecorder(KafkaConfig config, String clientId, Supplier<CassandraStore> cassandra) {
    Properties tuning = new Properties();
    // records are off every path: wait for a fuller fetch, and spend less CPU on empty ones
    tuning.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 250);
    tuning.put(ConsumerConfig.FETCH_MIN_BYTES_CONFIG, 16 * 1024);
    this.loop =
        new ConsumerLoop(
            config,
            new ConsumerLoop.Settings(
                Topics.RESULTS_GROUP, clientId, Duration.ofSeconds(6), Duration.ofSeconds(1)),
            tuning,
            "result-recorder");
    this.consumer = loop.consumer();
    this.cassandra = cassandra;
  }

  /** Starts consuming. */
  public void start() {
    consumer.subscribe(List.of(Topics.RESULTS));
    loop.start(this::recordOnce, () -> {});
  }

  /** Counters for {@code /health}. */
  public Map<String, Long> counters() {
    return Map.of("recorded", recorded.get(), "record_errors", recordErrors.get());
  }

  private void recordOnce() {
    ConsumerRecords<String, byte[]> records = consumer.poll(Duration.ofMillis(500));
    if (records.isEmpty()) {
      return;
    }
    List<ExecutionRecord> batch = new ArrayList<>();
    for (ConsumerRecord<String, byte[]> record : records) {
      toRecord(record.value()).ifPresent(batch::add);
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

  private boolean store(List<ExecutionRecord> batch) {
    CassandraStore store = cassandra.get();
    if (store == null) {
      return false;
    }
    try {
      store
          .recordExecutions(batch)
          .toCompletableFuture()
          .get(STORE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
      return true;
    } catch (java.util.concurrent.ExecutionException e) {
      if (e.getCause()
          instanceof com.datastax.oss.driver.api.core.servererrors.InvalidQueryException invalid) {
        // Cassandra will never take these (a record it refuses): retrying would stop every
        // later result from being recorded
        LOG.atError()
            .addKeyValue("records", batch.size())
            .addKeyValue("error", invalid.getMessage())
            .log("execution records refused by cassandra; skipped");
        recordErrors.addAndGet(batch.size());
        return true;
      }
      return retryLater(batch, e);
    } catch (Exception e) {
      return retryLater(batch, e);
    }
  }

  private boolean retryLater(List<ExecutionRecord> batch, Exception e) {
    if (e instanceof InterruptedException) {
      Thread.currentThread().interrupt();
    }
    if (recordErrors.getAndAdd(batch.size()) % 100 == 0) {
      LOG.atWarn()
          .addKeyValue("records", batch.size())
          .addKeyValue("error", e.toString())
          .log("execution records not stored in cassandra; trying again");
    }
    return false;
  }

  /** The record of a RESULT/ERROR event; empty for anything else on the topic. */
  static java.util.Optional<ExecutionRecord> toRecord(byte[] raw) {
    EventMessage event;
    try {
      event = EventCodec.decode(raw);
    } catch (RuntimeException e) {
      return java.util.Optional.empty();
    }
    if (event.getKind() != EventKind.RESULT && event.getKind() != EventKind.ERROR) {
      return java.util.Optional.empty();
    }
    ResultDocument doc = null;
    try {
      doc = ResultDocument.parse(event.getPayload());
    } catch (RuntimeException e) {
      // not a result document: recorded from the event's own fields
    }
    boolean ok = event.getKind() == EventKind.RESULT;
    String output = doc == null || doc.output() == null ? "" : doc.output().toString();
    return java.util.Optional.of(
        new ExecutionRecord(
            event.getExecution_id(),
            event.getApp(),
            event.getWorkflow(),
            ok ? ExecutionStatus.SUCCEEDED : ExecutionStatus.FAILED,
            ok ? output : null,
            ok ? null : doc == null || doc.error() == null ? event.getError() : doc.error(),
            ok ? null : doc == null || doc.cause() == null ? event.getCause() : doc.cause(),
            Instant.ofEpochMilli(event.getCreated_ms())));
  }

  @Override
  public void close() {
    loop.close();
  }
}
