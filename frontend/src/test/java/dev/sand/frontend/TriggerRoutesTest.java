package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.redis.RedisServer;
import dev.sand.contracts.Keys;
import dev.sand.service.JsonHttp;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code GET /v1/apps/{app}/triggers} and {@code POST /v1/apps/{app}/triggers/{name}/pause|resume}
 * against a real redis-server and a fake host agent that echoes what reached it.
 */
@Timeout(30)
class TriggerRoutesTest {
  private static RedisServer redis;
  private static RedisLocalBus bus;

  private final HttpClient http = HttpClient.newHttpClient();
  private final List<String> received = new CopyOnWriteArrayList<>();
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
  void start() throws Exception {
    bus.call("FLUSHALL", c -> c.flushall());
    bus.set(Keys.app("hello"), FrontendFixture.APP_DOC.getBytes(StandardCharsets.UTF_8), null);
    agent = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    agent.createContext(
        "/v1/apps/",
        exchange -> {
          String seen = exchange.getRequestMethod() + " " + exchange.getRequestURI();
          received.add(seen);
          byte[] body = ("{\"seen\":\"" + seen + "\"}").getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().set("Content-Type", "application/json");
          exchange.sendResponseHeaders(200, body.length);
          exchange.getResponseBody().write(body);
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

  @AfterEach
  void stop() {
    frontend.close();
    agent.stop(0);
  }

  private HttpResponse<String> send(String method, String path) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + frontend.port() + path))
            .header("Authorization", FrontendFixture.BEARER)
            .method(method, HttpRequest.BodyPublishers.noBody())
            .timeout(Duration.ofSeconds(20))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static JsonNode json(HttpResponse<String> response) throws Exception {
    return JsonHttp.MAPPER.readTree(response.body());
  }

  /** The listing and both actions reach the agent as they were sent, with its answer returned. */
  @Test
  void listPauseResume_forwardedToTheAgent() throws Exception {
    HttpResponse<String> list = send("GET", "/v1/apps/hello/triggers");
    HttpResponse<String> pause = send("POST", "/v1/apps/hello/triggers/nightly/pause");
    HttpResponse<String> resume = send("POST", "/v1/apps/hello/triggers/Orders_2-b/resume");

    assertThat(List.of(list.statusCode(), pause.statusCode(), resume.statusCode()))
        .containsOnly(200);
    assertThat(json(pause).get("seen").asText())
        .isEqualTo("POST /v1/apps/hello/triggers/nightly/pause");
    assertThat(received)
        .containsExactly(
            "GET /v1/apps/hello/triggers",
            "POST /v1/apps/hello/triggers/nightly/pause",
            "POST /v1/apps/hello/triggers/Orders_2-b/resume");
  }

  /** Another method answers 405 with Allow; the agent is not asked. */
  @Test
  void wrongMethod_returns405WithAllow() throws Exception {
    HttpResponse<String> postList = send("POST", "/v1/apps/hello/triggers");
    HttpResponse<String> getPause = send("GET", "/v1/apps/hello/triggers/nightly/pause");
    HttpResponse<String> deleteResume = send("DELETE", "/v1/apps/hello/triggers/nightly/resume");

    assertThat(postList.statusCode()).isEqualTo(405);
    assertThat(postList.headers().firstValue("allow")).hasValue("GET");
    assertThat(getPause.statusCode()).isEqualTo(405);
    assertThat(getPause.headers().firstValue("allow")).hasValue("POST");
    assertThat(deleteResume.statusCode()).isEqualTo(405);
    assertThat(received).isEmpty();
  }

  /** A name no trigger can have answers 400 naming it; the agent is not asked. */
  @Test
  void badTriggerName_returns400NamingIt() throws Exception {
    for (String name : List.of("-lead", "_lead", "a.b", "x".repeat(65))) {
      HttpResponse<String> response = send("POST", "/v1/apps/hello/triggers/" + name + "/pause");

      assertThat(response.statusCode()).as(name).isEqualTo(400);
      assertThat(json(response).get("error").asText())
          .isEqualTo("trigger name must match [A-Za-z0-9][A-Za-z0-9_-]{0,63}, got '" + name + "'");
    }
    assertThat(send("POST", "/v1/apps/hello/triggers/" + "x".repeat(64) + "/pause").statusCode())
        .isEqualTo(200);
    assertThat(received).hasSize(1);
  }

  /** Another action, or a trigger without one, is an unknown path: 404. */
  @Test
  void unknownAction_returns404() throws Exception {
    for (String path :
        List.of(
            "/v1/apps/hello/triggers/nightly/fire",
            "/v1/apps/hello/triggers/nightly",
            "/v1/apps/hello/triggers/nightly/pause/now")) {
      HttpResponse<String> response = send("POST", path);

      assertThat(response.statusCode()).as(path).isEqualTo(404);
      assertThat(json(response).get("error").asText()).isEqualTo("no such path: " + path);
    }
    assertThat(received).isEmpty();
  }

  /** An app name no app can have answers 404 as a missing app does. */
  @Test
  void badAppName_returns404() throws Exception {
    HttpResponse<String> response = send("GET", "/v1/apps/Not_An_App/triggers");

    assertThat(response.statusCode()).isEqualTo(404);
    assertThat(json(response).get("error").asText()).startsWith("no application 'Not_An_App'");
    assertThat(received).isEmpty();
  }
}
