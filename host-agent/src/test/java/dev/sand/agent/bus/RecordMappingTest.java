package dev.sand.agent.bus;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.bus.EventCodec;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.ResultDocument;
import dev.sand.store.ExecutionEnd;
import dev.sand.store.ExecutionStart;
import dev.sand.store.HistoryEntry;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What the recorders make of the records of {@code sand.results} and {@code sand.history}. */
class RecordMappingTest {
  private static final String ID = "0123456789abcdef0123456789abcdef";

  private static EventMessage event(EventKind kind, byte[] payload) {
    return new EventMessage()
        .setKind(kind)
        .setFlag(EventFlag.FINISHED)
        .setExecution_id(ID)
        .setEvent_id("msg-1")
        .setApp("orders")
        .setWorkflow("main")
        .setCreated_ms(1000)
        .setPayload(payload)
        .setError("")
        .setCause("");
  }

  private static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  /** A RESULT is SUCCEEDED with its output, at the document's end time. */
  @Test
  void result_isSucceededWithOutput() {
    byte[] doc =
        new ResultDocument(
                ID,
                "orders",
                "main",
                ExecutionStatus.SUCCEEDED,
                0,
                2000,
                dev.sand.agent.JsonTestNodes.object("total", 3),
                null,
                null,
                null)
            .toBytes();

    ExecutionEnd end =
        ExecutionRecorder.toEnd(EventCodec.encode(event(EventKind.RESULT, doc))).orElseThrow();

    assertThat(end.status()).isEqualTo(ExecutionStatus.SUCCEEDED);
    assertThat(end.output()).isEqualTo("{\"total\":3}");
    assertThat(end.error()).isNull();
    assertThat(end.finishedAt()).isEqualTo(Instant.ofEpochMilli(2000));
    assertThat(end.startedAt()).isNull(); // the document has none: the start's record decides
  }

  /** A document with started_ms keys the listing itself (apps without history are listed). */
  @Test
  void resultWithStart_carriesItsStart() {
    byte[] doc =
        utf8(
            "{\"execution_id\":\""
                + ID
                + "\",\"status\":\"SUCCEEDED\",\"output\":1,\"started_ms\":1500,"
                + "\"finished_ms\":2000}");

    ExecutionEnd end =
        ExecutionRecorder.toEnd(EventCodec.encode(event(EventKind.RESULT, doc))).orElseThrow();

    assertThat(end.startedAt()).isEqualTo(Instant.ofEpochMilli(1500));
  }

  /** An ERROR whose document says ABORTED is recorded ABORTED, not FAILED. */
  @Test
  void abortedDocument_isRecordedAborted() {
    byte[] doc =
        utf8(
            "{\"execution_id\":\""
                + ID
                + "\",\"status\":\"ABORTED\",\"error\":\"States.Aborted\","
                + "\"cause\":\"stopped by ada\",\"finished_ms\":3000}");

    ExecutionEnd end =
        ExecutionRecorder.toEnd(EventCodec.encode(event(EventKind.ERROR, doc))).orElseThrow();

    assertThat(end.status()).isEqualTo(ExecutionStatus.ABORTED);
    assertThat(end.error()).isEqualTo("States.Aborted");
    assertThat(end.cause()).isEqualTo("stopped by ada");
    assertThat(end.output()).isNull();
  }

  /** An ERROR with a FAILED document (or none that parses) is FAILED with the event's error. */
  @Test
  void errorWithoutDocument_isFailedFromTheEventsFields() {
    EventMessage error = event(EventKind.ERROR, utf8("not json")).setError("Boom").setCause("x");

    ExecutionEnd end = ExecutionRecorder.toEnd(EventCodec.encode(error)).orElseThrow();

    assertThat(end.status()).isEqualTo(ExecutionStatus.FAILED);
    assertThat(end.error()).isEqualTo("Boom");
    assertThat(end.finishedAt()).isEqualTo(Instant.ofEpochMilli(1000));
  }

  /** Anything but RESULT/ERROR on the results topic records nothing. */
  @Test
  void otherKinds_recordNothing() {
    assertThat(ExecutionRecorder.toEnd(EventCodec.encode(event(EventKind.TASK, utf8("{}")))))
        .isEmpty();
    assertThat(ExecutionRecorder.toEnd(new byte[] {1, 2, 3})).isEmpty();
  }

  /**
   * A HISTORY message's events are entries in their order (batch = the message's event id), and its
   * ExecutionStarted records the execution's start with input and name.
   */
  @Test
  void historyMessage_entriesInOrder_andItsStart() {
    String events =
        "[{\"type\":\"ExecutionStarted\",\"at_ms\":10,\"execution_id\":\""
            + ID
            + "\",\"input\":{\"a\":1},\"workflow\":\"main\",\"app\":\"orders\","
            + "\"name\":\"order-7\",\"redrive_count\":0,\"started_ms\":7},"
            + "{\"type\":\"StateEntered\",\"at_ms\":10,\"state\":\"A\"},"
            + "{\"type\":\"WaitEnded\",\"state\":\"B\"}]";

    ExecutionRecorder.Recorded recorded =
        ExecutionRecorder.toRecorded(EventCodec.encode(event(EventKind.HISTORY, utf8(events))))
            .orElseThrow();

    assertThat(recorded.entries())
        .extracting(HistoryEntry::index, HistoryEntry::atMs, HistoryEntry::batch)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple(0, 10L, "msg-1"),
            org.assertj.core.groups.Tuple.tuple(1, 10L, "msg-1"),
            // an event without at_ms takes the message's time
            org.assertj.core.groups.Tuple.tuple(2, 1000L, "msg-1"));
    assertThat(recorded.entries().get(1).event()).contains("\"StateEntered\"");
    assertThat(recorded.starts())
        .containsExactly(
            new ExecutionStart(
                ID,
                "orders",
                "main",
                "{\"a\":1}",
                "order-7",
                null,
                Instant.ofEpochMilli(7),
                Instant.ofEpochMilli(10),
                0));
  }

  /** ExecutionRedriven records a redrive: its count, no input or name (the first start's stay). */
  @Test
  void redrivenEvent_recordsARedrive() {
    String events =
        "[{\"type\":\"ExecutionRedriven\",\"at_ms\":50,\"from_state\":\"B\","
            + "\"input\":{\"b\":2},\"redrive_count\":2}]";

    ExecutionStart start =
        ExecutionRecorder.toRecorded(EventCodec.encode(event(EventKind.HISTORY, utf8(events))))
            .orElseThrow()
            .starts()
            .get(0);

    assertThat(start.redriven()).isTrue();
    assertThat(start.redriveCount()).isEqualTo(2);
    assertThat(start.input()).isNull();
    assertThat(start.name()).isNull();
    assertThat(start.trigger()).isNull();
    assertThat(start.app()).isEqualTo("orders"); // from the message
  }

  /**
   * An ExecutionStarted event's {@code trigger} object is recorded as compact JSON; one that is
   * absent, null or not an object records none.
   */
  @Test
  void startedByATrigger_recordsTheTriggerAsCompactJson() {
    String started =
        "{\"type\":\"ExecutionStarted\",\"at_ms\":10,\"input\":{},\"name\":\"nightly-20261127T020000Z\","
            + "\"trigger\": {\"name\": \"nightly\", \"kind\": \"schedule\","
            + " \"time\": \"2026-11-27T02:00:00Z\"}}";

    ExecutionStart start = startOf(started);

    assertThat(start.trigger())
        .isEqualTo(
            "{\"name\":\"nightly\",\"kind\":\"schedule\",\"time\":\"2026-11-27T02:00:00Z\"}");
    assertThat(start.name()).isEqualTo("nightly-20261127T020000Z");
    for (String trigger : List.of("", ",\"trigger\":null", ",\"trigger\":\"orders\"")) {
      assertThat(startOf("{\"type\":\"ExecutionStarted\",\"at_ms\":10" + trigger + "}").trigger())
          .as(trigger)
          .isNull();
    }
  }

  /** A redrive records no trigger, even if its event carried one: the first start's stays. */
  @Test
  void redriven_recordsNoTrigger() {
    assertThat(
            startOf(
                    "{\"type\":\"ExecutionRedriven\",\"at_ms\":50,\"redrive_count\":1,"
                        + "\"trigger\":{\"name\":\"nightly\",\"kind\":\"schedule\"}}")
                .trigger())
        .isNull();
  }

  private static ExecutionStart startOf(String event) {
    return ExecutionRecorder.toRecorded(
            EventCodec.encode(event(EventKind.HISTORY, utf8("[" + event + "]"))))
        .orElseThrow()
        .starts()
        .get(0);
  }

  /** A HISTORY payload that is not a JSON list, or another kind, records nothing. */
  @Test
  void notAHistoryList_recordsNothing() {
    assertThat(
            ExecutionRecorder.toRecorded(
                EventCodec.encode(event(EventKind.HISTORY, utf8("{\"type\":\"x\"}")))))
        .isEmpty();
    assertThat(ExecutionRecorder.toRecorded(EventCodec.encode(event(EventKind.RESULT, utf8("[]")))))
        .isEmpty();
  }
}
