package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The frontend's own routes ({@link FrontendFixture}): /health, start-up without Redis, an unknown
 * path or method, and / sending a browser to the GUI.
 */
@Timeout(30)
class FrontendRoutesTest extends FrontendFixture {
  /** GET /health answers 200 with the service, its id, port, pid and Redis socket. */
  @Test
  void health_redisUp_returnsOkWithIdentity() throws Exception {
    start();

    HttpResponse<String> response = send("GET", "/health", null);

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("content-type")).hasValue("application/json");
    JsonNode body = json(response);
    assertThat(body.get("status").asText()).isEqualTo("ok");
    assertThat(body.get("service").asText()).isEqualTo("frontend");
    assertThat(body.get("frontend_id").asText()).isEqualTo("fe-" + frontend.port());
    assertThat(body.get("port").asInt()).isEqualTo(frontend.port());
    assertThat(body.get("pid").asLong()).isEqualTo(ProcessHandle.current().pid());
    assertThat(body.get("redis").asText()).isEqualTo(redis.socket().toString());
  }

  /** Start-up fails naming the socket when Redis is not there. */
  @Test
  void start_redisMissing_failsNamingSocket() {
    Frontend orphan = Frontend.create(config(Path.of("/nonexistent/r.sock"), 18090, 256), 0);

    assertThatThrownBy(orphan::start)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("/nonexistent/r.sock");
  }

  /** Unknown paths answer 404 with a JSON error naming the path. */
  @Test
  void unknownPath_returns404Json() throws Exception {
    start();

    HttpResponse<String> response = send("GET", "/apps/nope", null);

    assertThat(response.statusCode()).isEqualTo(404);
    assertThat(json(response).get("error").asText()).isEqualTo("no such path: /apps/nope");
  }

  /** Other methods on a known path answer 405 with Allow. */
  @Test
  void wrongMethod_returns405WithAllow() throws Exception {
    start();

    assertThat(send("POST", "/health", null).headers().firstValue("allow")).hasValue("GET, HEAD");
    HttpResponse<String> invoke = send("GET", "/v1/apps/hello/invoke", null);
    assertThat(invoke.statusCode()).isEqualTo(405);
    assertThat(invoke.headers().firstValue("allow")).hasValue("POST");
  }

  /** / sends a browser to the GUI, without a token. */
  @Test
  void root_redirectsToTheGui() throws Exception {
    start();

    HttpResponse<String> response = send("GET", "/", null, null);

    assertThat(response.statusCode()).isEqualTo(302);
    assertThat(response.headers().firstValue("Location")).hasValue("/ui/");
  }
}
