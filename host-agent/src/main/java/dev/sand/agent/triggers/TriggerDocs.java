package dev.sand.agent.triggers;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.bridge.kafka.KafkaBridge;
import dev.sand.store.TriggerFiring;
import dev.sand.store.TriggerState;
import dev.sand.store.cassandra.TriggerTable;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * What the API shows of an app's triggers: each one's definition, pause state, and for a schedule
 * its next and last firing, for a topic trigger its consumer group's lag. Reads the stored state
 * (Cassandra) and asks Kafka; runs nothing. Blocking; thread-safe.
 */
final class TriggerDocs {
  private static final long LAG_TIMEOUT_MS = 3000;

  private final Supplier<KafkaBridge> bridge;
  private final Clock clock;

  TriggerDocs(Supplier<KafkaBridge> bridge, Clock clock) {
    this.bridge = bridge;
    this.clock = clock;
  }

  /**
   * The triggers of {@code metadata}'s app as the API shows them (deployed here or not: the
   * description is the app's metadata), their state read from {@code table}.
   */
  List<ObjectNode> describe(JsonNode metadata, TriggerTable table) {
    String app = metadata.path("name").asText();
    Map<String, TriggerState> stored = table.states(app);
    List<ObjectNode> out = new ArrayList<>();
    List<String> problems = new ArrayList<>();
    Instant now = clock.instant();
    for (TriggerDef def : TriggerDef.of(metadata, problems)) {
      ObjectNode doc = def.spec().deepCopy();
      TriggerState state = stored.getOrDefault(def.name(), TriggerState.ACTIVE);
      doc.put("paused", state.paused());
      if (state.paused()) {
        doc.put("paused_at", Instant.ofEpochMilli(state.changedAt()).toString());
      } else {
        doc.putNull("paused_at");
      }
      if (def.isSchedule()) {
        Optional<Instant> next = state.paused() ? Optional.empty() : def.schedule().nextAfter(now);
        if (next.isPresent()) {
          doc.put("next_firing", next.get().toString());
        } else {
          doc.putNull("next_firing");
        }
        Optional<TriggerFiring> last = table.last(app, def.name());
        if (last.isPresent()) {
          ObjectNode l = doc.putObject("last_firing");
          l.put("time", last.get().firing());
          l.put("execution_id", last.get().executionId());
        } else {
          doc.putNull("last_firing");
        }
      } else {
        OptionalLong lag = groupLag(def);
        if (lag.isPresent()) {
          doc.put("lag", lag.getAsLong());
        } else {
          doc.putNull("lag");
        }
      }
      out.add(doc);
    }
    return out;
  }

  /**
   * The records of {@code def}'s topic its group has not started, over every partition (every
   * host's part): end offsets less committed ones; empty when Kafka does not answer in time.
   */
  private OptionalLong groupLag(TriggerDef def) {
    KafkaBridge kafka = bridge.get();
    if (kafka == null) {
      return OptionalLong.empty();
    }
    Admin admin = kafka.admin();
    try {
      Map<TopicPartition, OffsetAndMetadata> committed =
          admin
              .listConsumerGroupOffsets(TopicTrigger.group(def.app(), def.name()))
              .partitionsToOffsetAndMetadata()
              .get(LAG_TIMEOUT_MS, TimeUnit.MILLISECONDS);
      if (committed.isEmpty()) {
        return OptionalLong.of(0); // nothing read yet: the group starts at the topic's end
      }
      Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
      committed.keySet().forEach(tp -> latest.put(tp, OffsetSpec.latest()));
      var ends = admin.listOffsets(latest).all().get(LAG_TIMEOUT_MS, TimeUnit.MILLISECONDS);
      long total = 0;
      for (var entry : committed.entrySet()) {
        var end = ends.get(entry.getKey());
        if (end != null && entry.getValue() != null) {
          total += Math.max(0, end.offset() - entry.getValue().offset());
        }
      }
      return OptionalLong.of(total);
    } catch (ExecutionException | TimeoutException e) {
      return OptionalLong.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return OptionalLong.empty();
    }
  }
}
