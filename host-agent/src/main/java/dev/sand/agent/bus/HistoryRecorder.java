package dev.sand.agent.bus;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sand.bus.EventCodec;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.config.KafkaConfig;
import dev.sand.contracts.Topics;
import dev.sand.store.ExecutionStart;
import dev.sand.store.HistoryEntry;
import dev.sand.store.cassandra.CassandraStore;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records executions' history events in Cassandra from {@code sand.history}, in consumer group
 * {@code sand-history} ({@link BatchRecorder}: commits after Cassandra took the batch). A record is
 * one HISTORY message: the events one grain instance emitted for one step, a JSON list in order.
 * Each event is stored as it came ({@code execution_history}, up to the cap of {@code
 * HistoryTable}); an ExecutionStarted or ExecutionRedriven event also records the execution as
 * RUNNING with its input, name and redrive count ({@code ExecutionTable#recordStarts}), so running
 * executions can be listed.
 */
public final class HistoryRecorder implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HistoryRecorder.class);
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /**
   * What one HISTORY message records.
   *
   * @param entries its events, in order
   * @param starts the starts (and redrives) among them
   */
  record Recorded(List<HistoryEntry> entries, List<ExecutionStart> starts) {}

  private final BatchRecorder<Recorded> recorder;

  public HistoryRecorder(KafkaConfig config, String clientId, Supplier<CassandraStore> cassandra) {
    this.recorder =
        new BatchRecorder<>(
            config,
            clientId,
            cassandra,
            new BatchRecorder.Recording<>(
                Topics.HISTORY,
                Topics.HISTORY_GROUP,
                "history",
                HistoryRecorder::read,
                HistoryRecorder::store));
  }

  /** Starts consuming. */
  public void start() {
    recorder.start();
  }

  /** Counters for {@code /health}. */
  public Map<String, Long> counters() {
    return recorder.counters("history_");
  }

  private static java.util.concurrent.CompletionStage<Void> store(
      CassandraStore store, List<Recorded> batch) {
    List<HistoryEntry> entries = new ArrayList<>();
    List<ExecutionStart> starts = new ArrayList<>();
    for (Recorded recorded : batch) {
      entries.addAll(recorded.entries());
      starts.addAll(recorded.starts());
    }
    // both on this thread (they prepare statements, which the driver's threads must not) and
    // independent of each other: the events and the rows of their executions
    return java.util.concurrent.CompletableFuture.allOf(
        store.history().record(entries).toCompletableFuture(),
        store.executions().recordStarts(starts).toCompletableFuture());
  }

  private static List<Recorded> read(byte[] raw) {
    return toRecorded(raw).map(List::of).orElse(List.of());
  }

  /** What a HISTORY message records; empty for anything else, or a message that is not a list. */
  static java.util.Optional<Recorded> toRecorded(byte[] raw) {
    EventMessage message;
    try {
      message = EventCodec.decode(raw);
    } catch (RuntimeException e) {
      return java.util.Optional.empty();
    }
    if (message.getKind() != EventKind.HISTORY || message.getExecution_id() == null) {
      return java.util.Optional.empty();
    }
    JsonNode events;
    try {
      events = MAPPER.readTree(message.getPayload());
    } catch (IOException e) {
      events = null;
    }
    if (events == null || !events.isArray()) {
      LOG.atWarn()
          .addKeyValue("execution_id", message.getExecution_id())
          .log("history message is not a JSON list of events; skipped");
      return java.util.Optional.empty();
    }
    String id = message.getExecution_id();
    String batch = message.getEvent_id() == null ? "" : message.getEvent_id();
    List<HistoryEntry> entries = new ArrayList<>();
    List<ExecutionStart> starts = new ArrayList<>();
    int index = 0;
    for (JsonNode event : events) {
      long at = event.path("at_ms").asLong(message.getCreated_ms());
      entries.add(new HistoryEntry(id, at, batch, index++, event.toString()));
      String type = event.path("type").asText("");
      if ("ExecutionStarted".equals(type) || "ExecutionRedriven".equals(type)) {
        start(message, event, at, "ExecutionRedriven".equals(type)).ifPresent(starts::add);
      }
    }
    return java.util.Optional.of(new Recorded(entries, starts));
  }

  private static java.util.Optional<ExecutionStart> start(
      EventMessage message, JsonNode event, long at, boolean redriven) {
    String app = text(event, "app", message.getApp());
    String workflow = text(event, "workflow", message.getWorkflow());
    JsonNode input = event.get("input");
    int redrives = event.path("redrive_count").asInt(redriven ? 1 : 0);
    // the frontend's acceptance (the driver adds it); the event's own time when absent
    long started = event.path("started_ms").asLong(at);
    try {
      return java.util.Optional.of(
          new ExecutionStart(
              message.getExecution_id(),
              app,
              workflow,
              redriven || input == null ? null : input.toString(),
              redriven ? null : text(event, "name", null),
              Instant.ofEpochMilli(started > 0 ? started : at),
              Instant.ofEpochMilli(at),
              redriven ? Math.max(1, redrives) : 0));
    } catch (IllegalArgumentException e) {
      LOG.atWarn()
          .addKeyValue("execution_id", message.getExecution_id())
          .addKeyValue("error", e.getMessage())
          .log("start event without its app; only its history is recorded");
      return java.util.Optional.empty();
    }
  }

  private static String text(JsonNode event, String field, String fallback) {
    JsonNode value = event.get(field);
    return value == null || value.isNull() || value.asText().isEmpty() ? fallback : value.asText();
  }

  @Override
  public void close() {
    recorder.close();
  }
}
