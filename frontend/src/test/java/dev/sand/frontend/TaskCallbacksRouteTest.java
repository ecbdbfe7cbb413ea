package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.redis.RedisServer;
import dev.sand.contracts.Keys;
import dev.sand.contracts.ResultDocument;
import dev.sand.contracts.TaskToken;
import dev.sand.contracts.TaskTokens;
import dev.sand.service.JsonHttp;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code POST /v1/tasks/{token}/...} against a real redis-server (the timers nudged) and a fake
 * host agent that answers what the real one would.
 */
@Timeout(30)
class TaskCallbacksRouteTest {
  private static final String TOKEN =
      TaskTokens.mint(
          TaskTokens.appKey(FrontendFixture.SECRET, "hello"),
          new TaskToken("hello", "exec-1", "exec-1/Approve#1"));
  private static final byte[] MEMBER = "the-timer's-bytes".getBytes(StandardCharsets.UTF_8);
  private static final byte[] TIMERS = Keys.timers().getBytes(StandardCharsets.UTF_8);
  private static final double FAR = 9e12;

  private static RedisServer redis;
  private static RedisLocalBus bus;

  private final HttpClient http = HttpClient.newHttpClient();
  private final AtomicReference<String> received = new AtomicReference<>();
  private HttpServer agent;
  private Frontend frontend;

  @BeforeAll
  static void startRedis() throws Exception {
    redis = RedisServer.start();
    bus = RedisLocalBus.connect(redis.socket(), Duration.ofSeconds(5));
  }

  @AfterAll
  static void stopRedis() throws Exception {
    bus.close();
    redis.close();
  }

  @BeforeEach
  void deployHello() {
    bus.call("FLUSHALL", c -> c.flushall());
    bus.set(Keys.app("hello"), FrontendFixture.APP_DOC.getBytes(StandardCharsets.UTF_8), null);
    bus.call("ZADD", c -> c.zadd(TIMERS, FAR, MEMBER));
  }

  @AfterEach
  void stop() {
    if (frontend != null) {
      frontend.close();
    }
    if (agent != null) {
      agent.stop(0);
    }
  }

  /** A frontend whose host agent answers every task route with {@code status} and {@code body}. */
  private void start(int status, String body) throws Exception {
    agent = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    agent.createContext(
        "/internal/tasks/",
        exchange -> {
          try (InputStream in = exchange.getRequestBody()) {
            received.set(
                exchange.getRequestURI()
                    + " "
                    + exchange.getRequestHeaders().getFirst("X-Sand-User")
                    + " "
                    + new String(in.readAllBytes(), StandardCharsets.UTF_8));
          }
          byte[] answer = body.getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().set("Content-Type", "application/json");
          exchange.sendResponseHeaders(status, answer.length);
          exchange.getResponseBody().write(answer);
          exchange.close();
        });
    agent.start();
    frontend =
        Frontend.create(
            FrontendFixture.config(redis.socket(), agent.getAddress().getPort(), 256),
            0,
            FrontendFixture::lookup);
    frontend.start();
  }

  private HttpResponse<String> post(String path, String body, String authorization)
      throws Exception {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + frontend.port() + path))
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .timeout(Duration.ofSeconds(20));
    if (authorization != null) {
      request.header("Authorization", authorization);
    }
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static JsonNode json(HttpResponse<String> response) throws Exception {
    return JsonHttp.MAPPER.readTree(response.body());
  }

  private static double timerScore() {
    return bus.call("ZSCORE", c -> c.zscore(TIMERS, MEMBER));
  }

  /**
   * A success is forwarded for the caller; the wait's timer moves to now on its host; the client
   * gets the status only.
   */
  @Test
  void success_forwardedThenTimerNudged() throws Exception {
    String member = Base64.getEncoder().encodeToString(MEMBER);
    start(200, "{\"status\":\"SUCCEEDED\",\"host\":\"host-1\",\"member\":\"" + member + "\"}");
    long before = System.currentTimeMillis();

    HttpResponse<String> response =
        post(
            "/v1/tasks/" + TOKEN + "/success", "{\"output\": {\"ok\": 1}}", FrontendFixture.BEARER);

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.body()).isEqualTo("{\"status\":\"SUCCEEDED\"}");
    assertThat(received.get())
        .isEqualTo(
            "/internal/tasks/complete ada {\"token\":\""
                + TOKEN
                + "\",\"status\":\"SUCCEEDED\",\"outcome\":{\"output\":{\"ok\":1}}}");
    assertThat(timerScore()).isBetween((double) before, (double) System.currentTimeMillis());
  }

  /**
   * An answer to an execution whose status document says it ended (a stop, whose record reaches
   * Cassandra later) is refused here with its status; the agent is not asked, nothing is nudged.
   */
  @Test
  void success_executionEnded_409WithItsStatus() throws Exception {
    start(200, "{\"status\":\"SUCCEEDED\",\"host\":\"host-1\",\"member\":\"AQID\"}");
    ResultDocument failed = ResultDocument.failed("exec-1", "hello", "main", 1, "E", "c");
    bus.set(Keys.result("exec-1"), failed.toBytes(), null);

    HttpResponse<String> response =
        post("/v1/tasks/" + TOKEN + "/success", "{\"output\": 1}", FrontendFixture.BEARER);

    assertThat(response.statusCode()).isEqualTo(409);
    assertThat(json(response).get("error").asText())
        .isEqualTo("execution 'exec-1' already ended (FAILED): its task no longer waits");
    assertThat(received.get()).isNull();
    assertThat(timerScore()).isEqualTo(FAR);
  }

  /** A host this frontend does not know is skipped: the timer fires at its deadline. */
  @Test
  void failure_unknownHost_stillAnswers200() throws Exception {
    start(200, "{\"status\":\"FAILED\",\"host\":\"host-9\",\"member\":\"AQID\"}");

    HttpResponse<String> response =
        post("/v1/tasks/" + TOKEN + "/failure", "{\"error\": \"No\"}", FrontendFixture.BEARER);

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(json(response).get("status").asText()).isEqualTo("FAILED");
    assertThat(timerScore()).isEqualTo(FAR);
  }

  /** The agent's 409 (the wait ended) reaches the client with its message; nothing is nudged. */
  @Test
  void heartbeat_waitEnded_passes409() throws Exception {
    start(409, "{\"error\":\"the task is no longer waiting: timed out: States.Timeout\"}");

    HttpResponse<String> response =
        post("/v1/tasks/" + TOKEN + "/heartbeat", "", FrontendFixture.BEARER);

    assertThat(response.statusCode()).isEqualTo(409);
    assertThat(json(response).get("error").asText()).contains("timed out: States.Timeout");
    assertThat(received.get()).startsWith("/internal/tasks/heartbeat ada {\"token\":");
    assertThat(timerScore()).isEqualTo(FAR);
  }

  /** Without a bearer token: 401, and the agent is not asked. */
  @Test
  void success_noBearer_is401() throws Exception {
    start(200, "{}");

    HttpResponse<String> response = post("/v1/tasks/" + TOKEN + "/success", "{}", null);

    assertThat(response.statusCode()).isEqualTo(401);
    assertThat(received.get()).isNull();
  }

  /** A body over the app's payload limit (256 KiB here) is 413; the agent is not asked. */
  @Test
  void success_overLimit_is413() throws Exception {
    start(200, "{}");
    String big = "{\"output\": \"" + "x".repeat(256 * 1024) + "\"}";

    HttpResponse<String> response =
        post("/v1/tasks/" + TOKEN + "/success", big, FrontendFixture.BEARER);

    assertThat(response.statusCode()).isEqualTo(413);
    assertThat(received.get()).isNull();
  }

  /** A malformed token is 400, an unknown action 404, another method 405. */
  @Test
  void malformedRequests_refused() throws Exception {
    start(200, "{}");

    assertThat(post("/v1/tasks/not-a-token/success", "{}", FrontendFixture.BEARER).statusCode())
        .isEqualTo(400);
    assertThat(post("/v1/tasks/" + TOKEN + "/cancel", "{}", FrontendFixture.BEARER).statusCode())
        .isEqualTo(404);
    HttpResponse<String> get =
        http.send(
            HttpRequest.newBuilder(
                    URI.create(
                        "http://127.0.0.1:" + frontend.port() + "/v1/tasks/" + TOKEN + "/success"))
                .header("Authorization", FrontendFixture.BEARER)
                .GET()
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(get.statusCode()).isEqualTo(405);
    assertThat(received.get()).isNull();
  }
}
