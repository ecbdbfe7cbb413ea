package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.contracts.Keys;
import dev.sand.contracts.Tokens;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Bearer tokens on every /v1 route ({@link FrontendFixture}): none or a wrong one answers 401,
 * another user's app answers as a missing one, and a looked-up token is cached until the agents
 * flush it.
 */
@Timeout(30)
class FrontendAuthTest extends FrontendFixture {
  /** Without a token every /v1 route answers 401 with a challenge; /health needs none. */
  @Test
  void noToken_everyApiRouteAnswers401_healthStaysOpen() throws Exception {
    start();
    for (String[] call :
        new String[][] {
          {"POST", "/v1/apps/hello/invoke"},
          {"GET", "/v1/apps"},
          {"DELETE", "/v1/apps/hello"},
          {"GET", "/v1/executions/abc"},
          {"GET", "/v1/whoami"},
          {"POST", "/v1/tokens"}
        }) {
      HttpResponse<String> response = send(call[0], call[1], "{}", null);
      assertThat(response.statusCode()).as("%s %s", call[0], call[1]).isEqualTo(401);
      assertThat(response.headers().firstValue("www-authenticate"))
          .hasValue("Bearer realm=\"sand\"");
      assertThat(json(response).get("error").asText()).contains("Authorization: Bearer");
    }
    assertThat(send("GET", "/health", null, null).statusCode()).isEqualTo(200);
    // nothing reached the grain's queue
    assertThat(queued(Keys.grain("hello", "upper"))).isZero();
  }

  /** A malformed, unknown or non-bearer credential is refused the same way. */
  @Test
  void wrongToken_answers401() throws Exception {
    start();
    for (String authorization :
        List.of(
            "Bearer " + Tokens.generate(),
            "Bearer not-a-token",
            "Basic " + ADA,
            "Bearer " + ADA.substring(0, ADA.length() - 1))) {
      HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke", "{}", authorization);
      assertThat(response.statusCode()).as(authorization).isEqualTo(401);
    }
    assertThat(queued(Keys.grain("hello", "upper"))).isZero();
  }

  /** Another user's app answers exactly as an app that does not exist, so names do not leak. */
  @Test
  void otherUsersApp_answersAsMissing() throws Exception {
    start();
    HttpResponse<String> theirs = send("POST", "/v1/apps/hello/invoke", "{}", "Bearer " + BOB);
    HttpResponse<String> missing = send("POST", "/v1/apps/nosuch/invoke", "{}", "Bearer " + BOB);

    assertThat(theirs.statusCode()).isEqualTo(404).isEqualTo(missing.statusCode());
    assertThat(json(theirs).get("error").asText())
        .isEqualTo(json(missing).get("error").asText().replace("nosuch", "hello"));
    // and so do its executions
    String doc =
        "{\"execution_id\":\"e1\",\"app\":\"hello\",\"status\":\"SUCCEEDED\",\"output\":1}";
    bus.set(Keys.result("e1"), doc.getBytes(StandardCharsets.UTF_8), Duration.ofMinutes(1));
    assertThat(send("GET", "/v1/executions/e1", null, "Bearer " + BOB).statusCode()).isEqualTo(404);
    assertThat(send("GET", "/v1/executions/e1", null).statusCode()).isEqualTo(200);
    assertThat(queued(Keys.grain("hello", "upper"))).isZero();
  }

  /**
   * A token is looked up once, then cached; a flush (with the agents' secret only) makes the next
   * request look it up again, which is how a revocation takes effect at once.
   */
  @Test
  void tokens_cachedUntilFlushed_flushNeedsTheSecret() throws Exception {
    start();
    LOOKUPS.clear();
    send("GET", "/v1/executions/abc", null, "Bearer " + BOB);
    send("GET", "/v1/executions/abd", null, "Bearer " + BOB);
    assertThat(LOOKUPS).containsExactly(Tokens.hash(BOB));

    HttpResponse<String> forged =
        http.send(
            HttpRequest.newBuilder(uri("/internal/auth/flush"))
                .header("X-Sand-Internal", "guess")
                .POST(HttpRequest.BodyPublishers.noBody())
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(forged.statusCode()).isEqualTo(401);
    send("GET", "/v1/executions/abc", null, "Bearer " + BOB);
    assertThat(LOOKUPS).hasSize(1);

    HttpResponse<String> flushed =
        http.send(
            HttpRequest.newBuilder(uri("/internal/auth/flush"))
                .header("X-Sand-Internal", SECRET)
                .POST(HttpRequest.BodyPublishers.noBody())
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(flushed.statusCode()).isEqualTo(200);
    send("GET", "/v1/executions/abc", null, "Bearer " + BOB);
    assertThat(LOOKUPS).hasSize(2);
  }
}
