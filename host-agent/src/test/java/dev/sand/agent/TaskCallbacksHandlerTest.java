package dev.sand.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.config.ClusterConfig;
import dev.sand.contracts.TaskToken;
import dev.sand.contracts.TaskTokens;
import dev.sand.contracts.TaskWaitStatus;
import dev.sand.service.JsonHttp;
import dev.sand.store.TaskWait;
import dev.sand.store.TaskWaitClaim;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(20)
class TaskCallbacksHandlerTest {
  private static final String SECRET = "agent-secret";
  private static final String TOKEN =
      TaskTokens.mint(
          TaskTokens.appKey(SECRET, "thumbs"), new TaskToken("thumbs", "exec-1", "exec-1/A#1"));

  private final HttpClient http = HttpClient.newHttpClient();
  private HostAgent agent;

  @AfterEach
  void stop() {
    if (agent != null) {
      agent.close();
    }
  }

  private static JsonNode json(String text) throws Exception {
    return JsonHttp.MAPPER.readTree(text);
  }

  private static String body(Map<String, Object> fields) throws Exception {
    return JsonHttp.MAPPER.writeValueAsString(fields);
  }

  private static Map<String, Object> completion(String token, String status, Object outcome) {
    Map<String, Object> fields = new HashMap<>();
    fields.put("token", token);
    fields.put("status", status);
    fields.put("outcome", outcome);
    return fields;
  }

  private HttpResponse<String> post(String path, String body) throws Exception {
    if (agent == null) {
      // an agent without clients: Cassandra never connects, so past validation it answers 503
      agent =
          HostAgent.create(
              ClusterConfig.parse(HostAgentTest.CONFIG),
              new HostAgent.Wiring(0, List.of(), HostAgentTest.FAST, Clock.systemUTC()));
      agent.start();
    }
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + agent.port() + path))
            .header("X-Sand-Internal", SECRET)
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** A completion reads into the verified token's claims, its status and its outcome. */
  @Test
  void read_completion_verifiesTokenAndOutcome() throws Exception {
    TaskCallbacksHandler.Call call =
        TaskCallbacksHandler.Call.read(
            "/internal/tasks/complete",
            json(body(completion(TOKEN, "SUCCEEDED", Map.of("output", Map.of("ok", true))))),
            SECRET);

    assertThat(call.claims()).isEqualTo(new TaskToken("thumbs", "exec-1", "exec-1/A#1"));
    assertThat(call.status()).contains(TaskWaitStatus.SUCCEEDED);
    assertThat(call.outcome()).isEqualTo("{\"output\":{\"ok\":true}}");
  }

  /** A heartbeat needs the token only. */
  @Test
  void read_heartbeat_needsTokenOnly() throws Exception {
    TaskCallbacksHandler.Call call =
        TaskCallbacksHandler.Call.read(
            "/internal/tasks/heartbeat", json(body(Map.of("token", TOKEN))), SECRET);

    assertThat(call.status()).isEmpty();
  }

  /** Every malformed completion is refused naming what is wrong. */
  @Test
  void read_malformed_isRefusedNamingTheField() throws Exception {
    String path = "/internal/tasks/complete";
    Map<String, Object> failed = Map.of("error", "E", "cause", "c");
    assertThatThrownBy(() -> TaskCallbacksHandler.Call.read(path, json("[]"), SECRET))
        .hasMessageContaining("JSON object");
    assertThatThrownBy(() -> TaskCallbacksHandler.Call.read(path, json("{}"), SECRET))
        .hasMessageContaining("token is required");
    assertThatThrownBy(
            () ->
                TaskCallbacksHandler.Call.read(
                    path, json(body(completion(TOKEN, "WAITING", failed))), SECRET))
        .hasMessageContaining("status must be");
    assertThatThrownBy(
            () ->
                TaskCallbacksHandler.Call.read(
                    path, json(body(completion(TOKEN, "SUCCEEDED", failed))), SECRET))
        .hasMessageContaining("{\"output\": <JSON>}");
    assertThatThrownBy(
            () ->
                TaskCallbacksHandler.Call.read(
                    path, json(body(completion(TOKEN, "FAILED", Map.of("error", 1)))), SECRET))
        .hasMessageContaining("\"error\": string");
    // signed under another secret: not this cluster's token
    assertThatThrownBy(
            () ->
                TaskCallbacksHandler.Call.read(
                    path, json(body(completion(TOKEN, "FAILED", failed))), "other-secret"))
        .hasMessageContaining("signature does not match");
  }

  /** A taken completion names the status, and the host and timer member to nudge. */
  @Test
  void answer_takenCompletion_namesHostAndMember() {
    TaskWait before =
        new TaskWait(
            "h",
            "thumbs",
            "exec-1",
            TaskWaitStatus.WAITING,
            Optional.empty(),
            2000,
            0,
            1000,
            Optional.of("host-2"),
            Optional.of(new byte[] {1, 2, 3}));

    TaskCallbacksHandler.Answer answer =
        TaskCallbacksHandler.answer(
            new TaskWaitClaim.Taken(Optional.of(before)), TaskWaitStatus.FAILED);

    assertThat(answer.status()).isEqualTo(200);
    assertThat(answer.body())
        .containsEntry("status", "FAILED")
        .containsEntry("host", "host-2")
        .containsEntry("member", "AQID");
  }

  /** A completion before the registration has no timer to nudge yet: host and member are null. */
  @Test
  void answer_completionBeforeRegistration_hasNullHostAndMember() {
    TaskCallbacksHandler.Answer answer =
        TaskCallbacksHandler.answer(
            new TaskWaitClaim.Taken(Optional.empty()), TaskWaitStatus.SUCCEEDED);

    assertThat(answer.status()).isEqualTo(200);
    assertThat(answer.body())
        .containsEntry("status", "SUCCEEDED")
        .containsEntry("host", null)
        .containsEntry("member", null);
  }

  /** A heartbeat answers WAITING, also when nothing is registered yet. */
  @Test
  void answer_heartbeat_isWaiting() {
    assertThat(
            TaskCallbacksHandler.answer(
                    new TaskWaitClaim.Taken(Optional.empty()), TaskWaitStatus.WAITING)
                .body())
        .isEqualTo(Map.of("status", "WAITING"));
    assertThat(TaskCallbacksHandler.answer(new TaskWaitClaim.Missing(), TaskWaitStatus.WAITING))
        .isEqualTo(new TaskCallbacksHandler.Answer(200, Map.of("status", "WAITING")));
  }

  /** An ended wait answers 409 saying how it ended, with the timeout's error. */
  @Test
  void answer_ended_is409SayingHow() {
    assertThat(
            TaskCallbacksHandler.answer(
                new TaskWaitClaim.Ended(TaskWaitStatus.SUCCEEDED, Optional.of("{\"output\":1}")),
                TaskWaitStatus.FAILED))
        .isEqualTo(
            TaskCallbacksHandler.Answer.error(
                409, "the task is no longer waiting: already SUCCEEDED"));
    assertThat(
            TaskCallbacksHandler.answer(
                new TaskWaitClaim.Ended(
                    TaskWaitStatus.TIMED_OUT,
                    Optional.of("{\"error\":\"States.HeartbeatTimeout\",\"cause\":\"c\"}")),
                TaskWaitStatus.WAITING))
        .isEqualTo(
            TaskCallbacksHandler.Answer.error(
                409, "the task is no longer waiting: timed out: States.HeartbeatTimeout"));
  }

  /** Over HTTP: a malformed token is 400 before Cassandra is asked; a good one 503 without it. */
  @Test
  void post_overHttp_validatesThenNeedsCassandra() throws Exception {
    HttpResponse<String> forged =
        post("/internal/tasks/heartbeat", body(Map.of("token", "bad.token")));
    HttpResponse<String> good = post("/internal/tasks/heartbeat", body(Map.of("token", TOKEN)));

    assertThat(forged.statusCode()).isEqualTo(400);
    assertThat(json(forged.body()).path("error").asText()).contains("task token");
    assertThat(good.statusCode()).isEqualTo(503);
    assertThat(json(good.body()).path("error").asText()).contains("not connected");
  }

  /** Over HTTP: only POST is served. */
  @Test
  void get_overHttp_is405() throws Exception {
    post("/internal/tasks/complete", "{}"); // starts the agent
    HttpResponse<String> response =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + agent.port() + "/internal/tasks/complete"))
                .header("X-Sand-Internal", SECRET)
                .GET()
                .build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(response.statusCode()).isEqualTo(405);
    assertThat(response.headers().firstValue("Allow")).contains("POST");
  }
}
