package dev.sand.agent.bus;

import dev.sand.bus.EventCodec;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.config.KafkaConfig;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.ResultDocument;
import dev.sand.contracts.Topics;
import dev.sand.store.ExecutionEnd;
import dev.sand.store.cassandra.CassandraStore;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Records every execution's end in Cassandra ({@code sand.executions} and its listing row) from the
 * results topic, in consumer group {@code sand-results} ({@link BatchRecorder}: commits after
 * Cassandra took the batch). Redis keeps a result for an hour; Cassandra for the configured
 * retention.
 *
 * <p>The status is the result document's: SUCCEEDED, FAILED, or ABORTED (an execution stopped on
 * request, an ERROR event whose document says ABORTED). The listing row is keyed by the start: the
 * document's {@code started_ms} when it has one, else the start its ExecutionStarted event recorded
 * ({@code ExecutionTable}: written, read back, listed).
 */
public final class ResultRecorder implements AutoCloseable {
  private final BatchRecorder<ExecutionEnd> recorder;

  public ResultRecorder(KafkaConfig config, String clientId, Supplier<CassandraStore> cassandra) {
    this.recorder =
        new BatchRecorder<>(
            config,
            clientId,
            cassandra,
            new BatchRecorder.Recording<>(
                Topics.RESULTS,
                Topics.RESULTS_GROUP,
                "result",
                raw -> toEnd(raw).map(List::of).orElse(List.of()),
                (store, ends) -> store.executions().recordEnds(ends)));
  }

  /** Starts consuming. */
  public void start() {
    recorder.start();
  }

  /** Counters for {@code /health}. */
  public Map<String, Long> counters() {
    return recorder.counters("");
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

  @Override
  public void close() {
    recorder.close();
  }
}
