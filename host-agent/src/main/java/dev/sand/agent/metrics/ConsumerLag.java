package dev.sand.agent.metrics;

import dev.sand.bridge.kafka.KafkaBridge;
import dev.sand.contracts.Topics;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The lag of SAND's consumer groups (end offset minus committed offset, summed over the group's
 * partitions), asked of the broker through the admin client at most every {@link #MAX_AGE_NS}: a
 * scrape every few seconds must not become a stream of admin requests. Thread-safe.
 */
final class ConsumerLag {
  static final List<String> GROUPS = List.of(Topics.HOSTS_GROUP, Topics.RECORDS_GROUP);
  private static final long MAX_AGE_NS = TimeUnit.SECONDS.toNanos(10);
  private static final long TIMEOUT_MS = 2000;

  private final Supplier<KafkaBridge> kafka;
  private Map<String, Long> last = Map.of();
  private long readAt;

  ConsumerLag(Supplier<KafkaBridge> kafka) {
    this.kafka = kafka;
  }

  /**
   * The lag per group that has committed offsets; the last answer when it is recent.
   *
   * @throws IllegalStateException when the broker does not answer in time
   */
  synchronized Map<String, Long> read() {
    long now = System.nanoTime();
    if (readAt != 0 && now - readAt < MAX_AGE_NS) {
      return last;
    }
    KafkaBridge bridge = kafka.get();
    if (bridge == null) {
      return Map.of();
    }
    Map<String, Long> lag = new LinkedHashMap<>();
    try {
      for (String group : GROUPS) {
        lag(bridge.admin(), group).ifPresent(value -> lag.put(group, value));
      }
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("consumer lag: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("consumer lag: interrupted", e);
    }
    last = Map.copyOf(lag);
    readAt = now;
    return last;
  }

  private static java.util.Optional<Long> lag(Admin admin, String group)
      throws ExecutionException, TimeoutException, InterruptedException {
    Map<TopicPartition, OffsetAndMetadata> committed =
        admin
            .listConsumerGroupOffsets(group)
            .partitionsToOffsetAndMetadata()
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
    if (committed.isEmpty()) {
      return java.util.Optional.empty();
    }
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    committed.keySet().forEach(tp -> latest.put(tp, OffsetSpec.latest()));
    Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends =
        admin.listOffsets(latest).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
    long total = 0;
    for (Map.Entry<TopicPartition, OffsetAndMetadata> entry : committed.entrySet()) {
      ListOffsetsResult.ListOffsetsResultInfo end = ends.get(entry.getKey());
      if (end != null && entry.getValue() != null) {
        total += Math.max(0, end.offset() - entry.getValue().offset());
      }
    }
    return java.util.Optional.of(total);
  }
}
