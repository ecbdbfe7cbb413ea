package dev.sand.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.store.ExecutionRecord;
import dev.sand.store.ExecutionSummary;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/** How execution records appear in the API. */
class ExecutionJsonTest {
  private static final String ID = "0123456789abcdef0123456789abcdef";

  /** A RUNNING record shows its input, name, start and redrive count; no end, no output. */
  @Test
  void runningRecord_showsInputNameAndStart() {
    ExecutionRecord record =
        new ExecutionRecord(
            ID,
            "orders",
            "main",
            ExecutionStatus.RUNNING,
            "{\"a\":1}",
            null,
            null,
            null,
            "order-7",
            null,
            Instant.ofEpochMilli(10),
            Instant.ofEpochMilli(99), // an old end a redrive cleared in the meantime
            1,
            false);

    ObjectNode doc = ExecutionJson.document(record);

    assertThat(doc.path("status").asText()).isEqualTo("RUNNING");
    assertThat(doc.path("input").toString()).isEqualTo("{\"a\":1}");
    assertThat(doc.path("name").asText()).isEqualTo("order-7");
    assertThat(doc.path("started_ms").asLong()).isEqualTo(10);
    assertThat(doc.path("redrive_count").asInt()).isEqualTo(1);
    assertThat(doc.has("finished_ms")).isFalse();
    assertThat(doc.has("output")).isFalse();
  }

  /** An ABORTED record shows its error and cause and its end. */
  @Test
  void abortedRecord_showsErrorAndEnd() {
    ExecutionRecord record =
        new ExecutionRecord(
            ID,
            "orders",
            "main",
            ExecutionStatus.ABORTED,
            null,
            null,
            "States.Aborted",
            null,
            null,
            null,
            null,
            Instant.ofEpochMilli(20),
            0,
            false);

    ObjectNode doc = ExecutionJson.document(record);

    assertThat(doc.path("status").asText()).isEqualTo("ABORTED");
    assertThat(doc.path("error").asText()).isEqualTo("States.Aborted");
    assertThat(doc.path("cause").asText()).isEmpty();
    assertThat(doc.path("finished_ms").asLong()).isEqualTo(20);
    assertThat(doc.has("input")).isFalse();
    assertThat(doc.has("redrive_count")).isFalse();
    assertThat(doc.has("trigger")).isFalse();
  }

  /** The trigger that started an execution is shown as the object it was recorded as. */
  @Test
  void triggeredExecution_showsItsTriggerAsAnObject() {
    String schedule =
        "{\"name\":\"nightly\",\"kind\":\"schedule\",\"time\":\"2026-11-27T02:00:00Z\"}";
    String topic =
        "{\"name\":\"orders\",\"kind\":\"topic\",\"topic\":\"orders\",\"partition\":0,"
            + "\"offset\":17}";
    ExecutionRecord record =
        new ExecutionRecord(
            ID,
            "orders",
            "main",
            ExecutionStatus.SUCCEEDED,
            "{}",
            "1",
            null,
            null,
            "nightly-20261127T020000Z",
            schedule,
            Instant.ofEpochMilli(10),
            Instant.ofEpochMilli(20),
            0,
            false);
    ExecutionSummary row =
        new ExecutionSummary(
            ID,
            "orders",
            "main",
            ExecutionStatus.RUNNING,
            null,
            topic,
            Instant.ofEpochMilli(5),
            null,
            null,
            null,
            0);

    ObjectNode doc = ExecutionJson.document(record);
    ObjectNode summary = ExecutionJson.summary(row);

    assertThat(doc.get("trigger").isObject()).isTrue();
    assertThat(doc.get("trigger").toString()).isEqualTo(schedule);
    assertThat(doc.path("name").asText()).isEqualTo("nightly-20261127T020000Z");
    assertThat(summary.get("trigger").toString()).isEqualTo(topic);
    assertThat(summary.path("trigger").path("offset").asLong()).isEqualTo(17);
  }

  /** Recorded trigger text that is not a JSON object is not shown (never expected). */
  @Test
  void triggerNotAnObject_isLeftOut() {
    for (String text : List.of("not json", "[1]", "\"orders\"", "null")) {
      ObjectNode summary =
          ExecutionJson.summary(
              new ExecutionSummary(
                  ID,
                  "orders",
                  "main",
                  ExecutionStatus.RUNNING,
                  null,
                  text,
                  Instant.ofEpochMilli(5),
                  null,
                  null,
                  null,
                  0));

      assertThat(summary.has("trigger")).as(text).isFalse();
    }
  }

  /** A summary carries the required fields always and the optional ones only when set. */
  @Test
  void summary_optionalFieldsOnlyWhenSet() {
    ObjectNode running =
        ExecutionJson.summary(
            new ExecutionSummary(
                ID,
                "orders",
                "main",
                ExecutionStatus.RUNNING,
                null,
                null,
                Instant.ofEpochMilli(5),
                null,
                null,
                null,
                0));
    ObjectNode failed =
        ExecutionJson.summary(
            new ExecutionSummary(
                ID,
                "orders",
                "main",
                ExecutionStatus.FAILED,
                "n",
                null,
                Instant.ofEpochMilli(5),
                Instant.ofEpochMilli(9),
                "Boom",
                null,
                2));

    assertThat(running.properties())
        .extracting(java.util.Map.Entry::getKey)
        .containsExactly("execution_id", "app", "workflow", "status", "started_ms");
    assertThat(failed.path("finished_ms").asLong()).isEqualTo(9);
    assertThat(failed.path("error").asText()).isEqualTo("Boom");
    assertThat(failed.path("cause").asText()).isEmpty();
    assertThat(failed.path("name").asText()).isEqualTo("n");
    assertThat(failed.path("redrive_count").asInt()).isEqualTo(2);
  }
}
