package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Iterator;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The routes the frontend answers by asking the host agent, here a fake one or none at all ({@link
 * FrontendFixture}): deploys streamed, management calls forwarded, the cluster view, executions
 * Redis does not hold.
 */
@Timeout(30)
class AgentProxyTest extends FrontendFixture {
  /** Management calls are forwarded; NDJSON progress lines reach the client before the end. */
  @Test
  void deploy_proxiesToAgentAndStreamsNdjson() throws Exception {
    CountDownLatch firstLineSeen = new CountDownLatch(1);
    AtomicReference<String> received = new AtomicReference<>();
    startWithAgent(
        "/v1/apps",
        exchange -> {
          try (InputStream in = exchange.getRequestBody()) {
            received.set(
                exchange.getRequestMethod()
                    + " "
                    + exchange.getRequestURI()
                    + " "
                    + in.readAllBytes().length
                    + " "
                    + exchange.getRequestHeaders().getFirst("X-Sand-Internal")
                    + " "
                    + exchange.getRequestHeaders().getFirst("X-Sand-User")
                    + " "
                    + exchange.getRequestHeaders().getFirst("X-Sand-Role"));
          }
          exchange.getResponseHeaders().set("Content-Type", "application/x-ndjson");
          exchange.sendResponseHeaders(200, 0);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write("{\"status\":\"unpacking\"}\n".getBytes(StandardCharsets.UTF_8));
            out.flush();
            // the second line is written only after the client saw the first: proves streaming
            firstLineSeen.await(10, TimeUnit.SECONDS);
            out.write("{\"status\":\"deployed\",\"app\":{}}\n".getBytes(StandardCharsets.UTF_8));
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
    byte[] tar = new byte[3 * 1024 * 1024];

    HttpResponse<java.util.stream.Stream<String>> response =
        http.send(
            HttpRequest.newBuilder(uri("/v1/apps?force=1"))
                .header("Authorization", BEARER)
                .POST(HttpRequest.BodyPublishers.ofByteArray(tar))
                .header("Content-Type", "application/x-tar")
                .timeout(Duration.ofSeconds(20))
                .build(),
            HttpResponse.BodyHandlers.ofLines());

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("content-type")).hasValue("application/x-ndjson");
    Iterator<String> lines = response.body().iterator();
    assertThat(lines.next()).isEqualTo("{\"status\":\"unpacking\"}");
    firstLineSeen.countDown();
    assertThat(lines.next()).isEqualTo("{\"status\":\"deployed\",\"app\":{}}");
    assertThat(lines.hasNext()).isFalse();
    // the agent learns the caller from the frontend, which proves it with the agents' secret
    assertThat(received.get())
        .isEqualTo("POST /v1/apps?force=1 " + tar.length + " " + SECRET + " ada user");
  }

  /** GET and DELETE on an application are forwarded with their status and body. */
  @Test
  void app_getAndDelete_forwardedWithStatus() throws Exception {
    startWithAgent(
        "/v1/apps/",
        exchange -> {
          byte[] body =
              ("{\"method\":\""
                      + exchange.getRequestMethod()
                      + "\",\"path\":\""
                      + exchange.getRequestURI()
                      + "\"}")
                  .getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().set("Content-Type", "application/json");
          exchange.sendResponseHeaders(
              "DELETE".equals(exchange.getRequestMethod()) ? 404 : 200, body.length);
          exchange.getResponseBody().write(body);
          exchange.close();
        });

    HttpResponse<String> logs = send("GET", "/v1/apps/hello/logs?tail=5", null);
    HttpResponse<String> delete = send("DELETE", "/v1/apps/hello", null);

    assertThat(logs.statusCode()).isEqualTo(200);
    assertThat(json(logs).get("path").asText()).isEqualTo("/v1/apps/hello/logs?tail=5");
    assertThat(delete.statusCode()).isEqualTo(404);
    assertThat(json(delete).get("method").asText()).isEqualTo("DELETE");
  }

  /** When the host agent is down, management calls answer 503 naming its address. */
  @Test
  void apps_agentDown_returns503() throws Exception {
    int port = freePort();
    start(port, 256);

    HttpResponse<String> response = send("GET", "/v1/apps", null);

    assertThat(response.statusCode()).isEqualTo(503);
    assertThat(json(response).get("error").asText())
        .startsWith("host agent at 127.0.0.1:" + port + " is not reachable: ");
  }

  /** The cluster view keeps the sandboxes of the caller's own apps; the agent gets the secret. */
  @Test
  void cluster_listsHostWithTheCallersSandboxesOnly() throws Exception {
    AtomicReference<String> secretSeen = new AtomicReference<>();
    startWithAgent(
        ClusterRoute.AGENT_PATH,
        exchange -> {
          secretSeen.set(exchange.getRequestHeaders().getFirst("X-Sand-Internal"));
          byte[] body =
              """
              {"host_id": "host-1", "sandboxes": [
                {"app": "hello", "owner": "ada", "backend": "process", "state": "running",
                 "workers": [{"grain": "upper", "healthy": true, "pid": 41}]},
                {"app": "secret", "owner": "carol", "backend": "docker", "state": "running",
                 "workers": []},
                {"app": "orphan", "owner": null, "backend": "docker", "state": "running",
                 "workers": []}]}
              """
                  .getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().set("Content-Type", "application/json");
          exchange.sendResponseHeaders(200, body.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
          }
        });

    HttpResponse<String> ada = send("GET", "/v1/cluster", null);
    HttpResponse<String> bob = send("GET", "/v1/cluster", null, "Bearer " + BOB);

    assertThat(ada.statusCode()).isEqualTo(200);
    JsonNode host = json(ada).get("hosts").get(0);
    assertThat(host.get("host_id").asText()).isEqualTo(HOST);
    assertThat(host.get("healthy").asBoolean()).isTrue();
    assertThat(host.get("error").isNull()).isTrue();
    assertThat(host.get("sandboxes")).hasSize(1);
    assertThat(host.get("sandboxes").get(0).get("app").asText()).isEqualTo("hello");
    assertThat(host.get("sandboxes").get(0).get("workers").get(0).get("pid").asInt()).isEqualTo(41);
    assertThat(json(bob).get("hosts").get(0).get("sandboxes")).isEmpty();
    assertThat(secretSeen.get()).isEqualTo(SECRET);
  }

  /** A host whose agent does not answer is listed unhealthy, saying why. */
  @Test
  void cluster_agentAway_hostUnhealthyWithReason() throws Exception {
    start();

    HttpResponse<String> response = send("GET", "/v1/cluster", null);

    assertThat(response.statusCode()).isEqualTo(200);
    JsonNode host = json(response).get("hosts").get(0);
    assertThat(host.get("healthy").asBoolean()).isFalse();
    assertThat(host.get("error").asText())
        .startsWith("host agent at 127.0.0.1:")
        .contains("is not reachable");
    assertThat(host.get("sandboxes")).isEmpty();
  }

  /**
   * An execution Redis does not hold is asked of the host agent (the records in Cassandra); with no
   * agent running, 503 names it.
   */
  @Test
  void execution_unknownWithoutAgent_returns503NamingTheAgent() throws Exception {
    start();

    HttpResponse<String> response = send("GET", "/v1/executions/abc123", null);

    assertThat(response.statusCode()).isEqualTo(503);
    assertThat(json(response).get("error").asText()).startsWith("host agent at 127.0.0.1:");
  }
}
