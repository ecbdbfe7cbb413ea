package dev.sand.agent.bus;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sand.bus.EventCodec;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.config.KafkaConfig;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.HistoryTypes;
import dev.sand.contracts.ResultDocument;
import dev.sand.contracts.Topics;
import dev.sand.store.ExecutionEnd;
import dev.sand.store.ExecutionStart;
import dev.sand.store.HistoryEntry;
import dev.sand.store.cassandra.CassandraStore;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records executions in Cassandra from the two record topics, in one consumer of group {@code
 * sand-records} ({@link BatchRecorder}: commits after Cassandra took the batch; decision 0030):
 *
 * <ul>
 *   <li>{@code sand.history}: a HISTORY message is the events one worker step emitted, a JSON list
 *       in order. Each event is stored as it came ({@code execution_history}, up to the cap of
 *       {@code HistoryTable}); an ExecutionStarted or ExecutionRedriven event also records the
 *       execution as RUNNING with its input, name, trigger and redrive count, so running executions
 *       can be listed.
 *   <li>{@code sand.results}: a RESULT/ERROR event records the execution's end. The status is the
 *       result document's: SUCCEEDED, FAILED, or ABORTED (an execution stopped on request, an ERROR
 *       event whose document says ABORTED). The listing row is keyed by the start: the document's
 *       {@code started_ms} when it has one, else the start its ExecutionStarted event recorded.
 * </ul>
 *
 * <p>One consumer for both topics, so that a poll holds a short execution's start, history and end
 * together and Cassandra gets them in one batch ({@code ExecutionRecords}); the broker serves one
 * fetch where it served two. Redis keeps a result for an hour; Cassandra for the configured
 * retention.
 */
public final class ExecutionRecorder implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutionRecorder.class);
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /**
   * What one record of the record topics says about an execution.
   *
   * @param entries its history events, in order
   * @param starts the starts (and redrives) among them
   * @param ends its end, for a RESULT/ERROR event
   */
  record Recorded(
      List<HistoryEntry> entries, List<ExecutionStart> starts, List<ExecutionEnd> ends) {}

  private final BatchRecorder<Recorded> recorder;

  public ExecutionRecorder(
      KafkaConfig config, String clientId, Supplier<CassandraStore> cassandra) {
    this.recorder =
        new BatchRecorder<>(
            config,
            clientId,
            cassandra,
            new BatchRecorder.Recording<>(
                List.of(Topics.RESULTS, Topics.HISTORY),
                Topics.RECORDS_GROUP,
                "execution",
                ExecutionRecorder::read,
                ExecutionRecorder::store));
  }

  /** Starts consuming. */
  public void start() {
    recorder.start();
  }

  /** Counters for {@code /health}. */
  public Map<String, Long> counters() {
    return recorder.counters();
  }

  private static CompletionStage<Void> store(CassandraStore store, List<Recorded> batch) {
    List<HistoryEntry> entries = new ArrayList<>();
    List<ExecutionStart> starts = new ArrayList<>();
    List<ExecutionEnd> ends = new ArrayList<>();
    for (Recorded recorded : batch) {
      entries.addAll(recorded.entries());
      starts.addAll(recorded.starts());
      ends.addAll(recorded.ends());
    }
    return store.records().record(starts, entries, ends);
  }

  private static List<Recorded> read(ConsumerRecord<String, byte[]> record) {
    Optional<Recorded> recorded =
        Topics.HISTORY.equals(record.topic())
            ? toRecorded(record.value())
            : toEnd(record.value()).map(end -> new Recorded(List.of(), List.of(), List.of(end)));
    return recorded.map(List::of).orElse(List.of());
  }

  /** The end a RESULT/ERROR event records; empty for anything else on the topic. */
  static Optional<ExecutionEnd> toEnd(byte[] raw) {
    EventMessage event;
    try {
      event = EventCodec.decode(raw);
    } catch (RuntimeException e) {
      return Optional.empty();
    }
    if (event.getKind() != EventKind.RESULT && event.getKind() != EventKind.ERROR) {
      return Optional.empty();
    }
    ResultDocument doc = null;
    try {
      doc = ResultDocument.parse(event.getPayload());
    } catch (RuntimeException e) {
      // not a result document: recorded from the event's own fields
    }
    boolean ok = event.getKind() == EventKind.RESULT;
    ExecutionStatus status = ok ? ExecutionStatus.SUCCEEDED : ExecutionStatus.FAILED;
    if (!ok && doc != null && doc.status() == ExecutionStatus.ABORTED) {
      status = ExecutionStatus.ABORTED;
    }
    String output = doc == null || doc.output() == null ? "" : doc.output().toString();
    String error = doc == null || doc.error() == null ? event.getError() : doc.error();
    String cause = doc == null || doc.cause() == null ? event.getCause() : doc.cause();
    long finished = doc != null && doc.finishedMs() > 0 ? doc.finishedMs() : event.getCreated_ms();
    try {
      return Optional.of(
          new ExecutionEnd(
              event.getExecution_id(),
              event.getApp(),
              event.getWorkflow(),
              status,
              ok ? output : null,
              ok ? null : error,
              ok ? null : cause,
              Instant.ofEpochMilli(finished),
              doc != null && doc.startedMs() > 0 ? Instant.ofEpochMilli(doc.startedMs()) : null));
    } catch (IllegalArgumentException e) {
      return Optional.empty(); // no execution id: nothing to record it under
    }
  }

  /** What a HISTORY message records; empty for anything else, or a message that is not a list. */
  static Optional<Recorded> toRecorded(byte[] raw) {
    EventMessage message;
    try {
      message = EventCodec.decode(raw);
    } catch (RuntimeException e) {
      return Optional.empty();
    }
    if (message.getKind() != EventKind.HISTORY || message.getExecution_id() == null) {
      return Optional.empty();
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
      return Optional.empty();
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
      boolean redriven = HistoryTypes.EXECUTION_REDRIVEN.equals(type);
      if (redriven || HistoryTypes.EXECUTION_STARTED.equals(type)) {
        start(message, event, at, redriven).ifPresent(starts::add);
      }
    }
    return Optional.of(new Recorded(entries, starts, List.of()));
  }

  private static Optional<ExecutionStart> start(
      EventMessage message, JsonNode event, long at, boolean redriven) {
    String app = text(event, "app", message.getApp());
    String workflow = text(event, "workflow", message.getWorkflow());
    JsonNode input = event.get("input");
    int redrives = event.path("redrive_count").asInt(redriven ? 1 : 0);
    // the frontend's acceptance (the driver adds it); the event's own time when absent
    long started = event.path("started_ms").asLong(at);
    try {
      return Optional.of(
          new ExecutionStart(
              message.getExecution_id(),
              app,
              workflow,
              redriven || input == null ? null : input.toString(),
              redriven ? null : text(event, "name", null),
              redriven ? null : trigger(event),
              Instant.ofEpochMilli(started > 0 ? started : at),
              Instant.ofEpochMilli(at),
              redriven ? Math.max(1, redrives) : 0));
    } catch (IllegalArgumentException e) {
      LOG.atWarn()
          .addKeyValue("execution_id", message.getExecution_id())
          .addKeyValue("error", e.getMessage())
          .log("start event without its app; only its history is recorded");
      return Optional.empty();
    }
  }

  /**
   * The event's {@code trigger} (decision 0034) as compact JSON; null when absent or not an object
   * (the execution was not started by a trigger).
   */
  private static String trigger(JsonNode event) {
    JsonNode trigger = event.get("trigger");
    return trigger == null || !trigger.isObject() ? null : trigger.toString();
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
