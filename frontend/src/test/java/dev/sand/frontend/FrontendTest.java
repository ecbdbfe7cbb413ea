package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.config.ClusterConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(20)
class FrontendTest {
  static final String CONFIG =
      """
      {"state_dir": "/abs/state", "host_id": "host-1",
       "redis": {"socket": "/abs/state/run/redis.sock"},
       "kafka": {"bootstrap": "127.0.0.1:1"},
       "cassandra": {"contact_point": "127.0.0.1:1", "datacenter": "dc1", "keyspace": "sand"},
       "docker": {"host": "unix:///abs/docker.sock", "enabled": false},
       "frontend": {"ports": [18081], "max_payload_kb": 256},
       "host_agent": {"port": 18090},
       "nginx": {"port": 18080}}
      """;

  private final HttpClient http = HttpClient.newHttpClient();
  private Frontend frontend;

  @BeforeEach
  void start() {
    frontend = Frontend.create(ClusterConfig.parse(CONFIG), 0);
    frontend.start();
  }

  @AfterEach
  void stop() {
    frontend.close();
  }

  private HttpResponse<String> send(String method, String path) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + frontend.port() + path))
            .method(method, HttpRequest.BodyPublishers.noBody())
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** GET /health answers 200 with the service, its port and pid. */
  @Test
  void health_returnsOkWithIdentity() throws Exception {
    HttpResponse<String> response = send("GET", "/health");

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("content-type")).hasValue("application/json");
    JsonNode body = JsonHttp.MAPPER.readTree(response.body());
    assertThat(body.get("status").asText()).isEqualTo("ok");
    assertThat(body.get("service").asText()).isEqualTo("frontend");
    assertThat(body.get("port").asInt()).isEqualTo(frontend.port());
    assertThat(body.get("pid").asLong()).isEqualTo(ProcessHandle.current().pid());
  }

  /** Unknown paths answer 404 with a JSON error naming the path. */
  @Test
  void unknownPath_returns404Json() throws Exception {
    HttpResponse<String> response = send("GET", "/apps/nope");

    assertThat(response.statusCode()).isEqualTo(404);
    assertThat(JsonHttp.MAPPER.readTree(response.body()).get("error").asText())
        .isEqualTo("no such path: /apps/nope");
  }

  /** Other methods on /health answer 405 with Allow. */
  @Test
  void health_post_returns405() throws Exception {
    HttpResponse<String> response = send("POST", "/health");

    assertThat(response.statusCode()).isEqualTo(405);
    assertThat(response.headers().firstValue("allow")).hasValue("GET, HEAD");
  }
}
