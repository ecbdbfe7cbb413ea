package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.Keys;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code POST /v1/apps/{app}/invoke} accepted ({@link FrontendFixture}): synchronous and
 * asynchronous calls, their results and execution documents, and the host agent's copy of the
 * INVOKE event with backups on or off.
 */
@Timeout(30)
class InvokeRouteTest extends FrontendFixture {
  /** A synchronous invocation answers 200 with the output the entry grain's result carries. */
  @Test
  void invoke_sync_returnsWorkerOutput() throws Exception {
    start();
    AtomicReference<EventMessage> seen = new AtomicReference<>();
    Thread worker = worker(Keys.grain("hello", "upper"), "{\"text\": \"HI\"}", seen);

    HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke", "{\"text\": \"hi\"}");
    worker.join(5000);

    assertThat(response.statusCode()).isEqualTo(200);
    JsonNode body = json(response);
    assertThat(body.get("status").asText()).isEqualTo("SUCCEEDED");
    assertThat(body.get("output").get("text").asText()).isEqualTo("HI");
    String id = body.get("execution_id").asText();
    assertThat(id).matches("[0-9a-f]{32}");
    assertThat(response.headers().firstValue("x-sand-execution-id")).hasValue(id);
    EventMessage invoke = seen.get();
    assertThat(invoke.getKind()).isEqualTo(EventKind.INVOKE);
    assertThat(invoke.getFlag()).isEqualTo(EventFlag.QUEUED);
    assertThat(invoke.getExecution_id()).isEqualTo(id);
    assertThat(invoke.getEvent_id()).matches("[0-9a-f]{32}").isNotEqualTo(id);
    assertThat(invoke.getWorkflow()).isEqualTo("main");
    assertThat(invoke.getTarget_grain()).isEqualTo("upper");
    assertThat(invoke.getSource_grain()).isEmpty();
    assertThat(invoke.getReply_to()).isEqualTo(frontend.id());
    assertThat(invoke.getHost()).isEqualTo(HOST);
    assertThat(invoke.getAttempt()).isZero();
    assertThat(new String(invoke.getPayload(), StandardCharsets.UTF_8))
        .isEqualTo("{\"text\":\"hi\"}");
  }

  /** A failed execution still answers 200, with status FAILED, error and cause. */
  @Test
  void invoke_syncFailed_returns200WithErrorAndCause() throws Exception {
    start();
    Thread worker =
        new Thread(
            () -> {
              EventMessage invoke = take(Keys.grain("hello", "upper"));
              String doc =
                  "{\"execution_id\":\"%s\",\"status\":\"FAILED\",\"error\":\"Boom\",\"cause\":\"bad\"}"
                      .formatted(invoke.getExecution_id());
              bus.push(
                  Keys.reply(invoke.getReply_to()),
                  new EventMessage()
                      .setKind(EventKind.ERROR)
                      .setExecution_id(invoke.getExecution_id())
                      .setPayload(doc.getBytes(StandardCharsets.UTF_8)));
            });
    worker.setDaemon(true);
    worker.start();

    HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke?mode=sync", "{}");
    worker.join(5000);

    assertThat(response.statusCode()).isEqualTo(200);
    JsonNode body = json(response);
    assertThat(body.get("status").asText()).isEqualTo("FAILED");
    assertThat(body.get("error").asText()).isEqualTo("Boom");
    assertThat(body.get("cause").asText()).isEqualTo("bad");
  }

  /** A synchronous call without a result in time answers 202 RUNNING so the client can poll. */
  @Test
  void invoke_syncTimeout_returns202Running() throws Exception {
    start();

    HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke?timeout_s=1", "{}");

    assertThat(response.statusCode()).isEqualTo(202);
    assertThat(json(response).get("status").asText()).isEqualTo("RUNNING");
  }

  /**
   * An asynchronous invocation answers 202 at once; the execution reads RUNNING, then the final
   * document once stored.
   */
  @Test
  void invoke_async_returns202ThenExecutionShowsRunningThenResult() throws Exception {
    start();

    HttpResponse<String> response =
        send("POST", "/v1/apps/hello/invoke?mode=async&workflow=other", "[1, 2]");

    assertThat(response.statusCode()).isEqualTo(202);
    String id = json(response).get("execution_id").asText();
    assertThat(json(response).get("status").asText()).isEqualTo("RUNNING");
    EventMessage invoke = take(Keys.grain("hello", "greet"));
    assertThat(invoke.getReply_to()).isEmpty();
    assertThat(invoke.getWorkflow()).isEqualTo("other");

    JsonNode running = json(send("GET", "/v1/executions/" + id, null));
    assertThat(running.get("status").asText()).isEqualTo("RUNNING");
    assertThat(running.get("execution_id").asText()).isEqualTo(id);
    assertThat(running.get("app").asText()).isEqualTo("hello");
    assertThat(running.get("workflow").asText()).isEqualTo("other");
    assertThat(running.get("started_ms").asLong()).isPositive();
    long ttlMs = bus.call("PTTL", c -> c.pttl(Keys.result(id).getBytes(StandardCharsets.UTF_8)));
    assertThat(ttlMs).isBetween(Duration.ofMinutes(59).toMillis(), Duration.ofHours(1).toMillis());

    String done =
        "{\"execution_id\":\"" + id + "\",\"app\":\"hello\",\"status\":\"SUCCEEDED\",\"output\":3}";
    bus.set(Keys.result(id), done.getBytes(StandardCharsets.UTF_8), Duration.ofHours(1));
    HttpResponse<String> finished = send("GET", "/v1/executions/" + id, null);
    assertThat(finished.statusCode()).isEqualTo(200);
    assertThat(json(finished).get("output").asInt()).isEqualTo(3);
  }

  /**
   * With backups on, a synchronous call puts the host agent's copy (flag PROCESSING) of the INVOKE
   * event on its queue, before the event (the agent publishes it with its other backups).
   */
  @Test
  void invoke_withBackups_pushesProcessingCopyToAgentQueue() throws Exception {
    start();
    bus.set(
        Keys.app("backed"),
        APP_DOC
            .replace("\"hello\"", "\"backed\"")
            .replace("\"backups\": false", "\"backups\": true")
            .getBytes(StandardCharsets.UTF_8),
        null);

    var call =
        http.sendAsync(
            HttpRequest.newBuilder(uri("/v1/apps/backed/invoke?timeout_s=5"))
                .header("Authorization", BEARER)
                .POST(HttpRequest.BodyPublishers.ofString("{}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());

    EventMessage copy = take(Keys.agent(HOST));
    assertThat(copy.getFlag()).isEqualTo(EventFlag.PROCESSING);
    assertThat(copy.getKind()).isEqualTo(EventKind.INVOKE);
    EventMessage queued = take(Keys.grain("backed", "upper"));
    assertThat(queued.getEvent_id()).isEqualTo(copy.getEvent_id());
    assertThat(new String(queued.getPayload(), StandardCharsets.UTF_8)).isEqualTo("{}");
    call.cancel(true);
  }

  /**
   * With backups off, nothing goes to the agent's queue: no FINISHED flag would ever follow a copy,
   * and another run of the agent would take it for lost work.
   */
  @Test
  void invoke_withoutBackups_pushesNoCopy() throws Exception {
    start();

    String id =
        json(send("POST", "/v1/apps/hello/invoke?mode=async", "")).get("execution_id").asText();

    EventMessage queued = take(Keys.grain("hello", "upper"));
    assertThat(queued.getExecution_id()).isEqualTo(id);
    long copies = bus.call("LLEN", c -> c.llen(Keys.agent(HOST).getBytes(StandardCharsets.UTF_8)));
    assertThat(copies).isZero();
  }
}
