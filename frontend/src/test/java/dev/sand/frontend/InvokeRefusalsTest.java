package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.contracts.Keys;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Invocations refused before anything is queued ({@link FrontendFixture}): an unknown application
 * or workflow, no workflow to run, a body over frontend.max_payload_kb, a body that is not JSON.
 */
@Timeout(30)
class InvokeRefusalsTest extends FrontendFixture {
  /** An application that is not deployed (or an invalid name) answers 404 naming it. */
  @Test
  void invoke_unknownApp_returns404() throws Exception {
    start();

    HttpResponse<String> unknown = send("POST", "/v1/apps/nope/invoke", "{}");
    HttpResponse<String> invalid = send("POST", "/v1/apps/Bad_Name/invoke", "{}");

    assertThat(unknown.statusCode()).isEqualTo(404);
    assertThat(json(unknown).get("error").asText()).isEqualTo("no application 'nope' is deployed");
    assertThat(invalid.statusCode()).isEqualTo(404);
    assertThat(json(invalid).get("error").asText()).contains("'Bad_Name'");
  }

  /** An unknown workflow answers 404 listing the application's workflows. */
  @Test
  void invoke_unknownWorkflow_returns404ListingWorkflows() throws Exception {
    start();

    HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke?workflow=nope", "{}");

    assertThat(response.statusCode()).isEqualTo(404);
    assertThat(json(response).get("error").asText())
        .isEqualTo("application 'hello' has no workflow 'nope' (workflows: main, other)");
  }

  /** Without ?workflow= and without a default workflow the call is refused with 400. */
  @Test
  void invoke_noWorkflowNoDefault_returns400() throws Exception {
    bus.set(
        Keys.app("nodefault"),
        "{\"name\":\"nodefault\",\"owner\":\"ada\",\"workflows\":{\"a\":{\"entry_grain\":\"g\"}}}"
            .getBytes(StandardCharsets.UTF_8),
        null);
    start();

    HttpResponse<String> response = send("POST", "/v1/apps/nodefault/invoke", "{}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(json(response).get("error").asText()).contains("no default workflow", "a");
  }

  /** A body over frontend.max_payload_kb answers 413 and queues nothing. */
  @Test
  void invoke_bodyOverLimit_returns413() throws Exception {
    start(freePort(), 1);
    String big = "\"" + "x".repeat(2000) + "\"";

    HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke", big);

    assertThat(response.statusCode()).isEqualTo(413);
    assertThat(json(response).get("error").asText()).contains("1024 bytes");
    long queued =
        bus.call(
            "LLEN", c -> c.llen(Keys.grain("hello", "upper").getBytes(StandardCharsets.UTF_8)));
    assertThat(queued).isZero();
  }

  /** A chunked body (no Content-Length) over the limit is also refused with 413. */
  @Test
  void invoke_chunkedBodyOverLimit_returns413() throws Exception {
    start(freePort(), 1);
    byte[] big = ("\"" + "x".repeat(5000) + "\"").getBytes(StandardCharsets.UTF_8);

    HttpResponse<String> response =
        http.send(
            HttpRequest.newBuilder(uri("/v1/apps/hello/invoke"))
                .header("Authorization", BEARER)
                .POST(
                    HttpRequest.BodyPublishers.ofInputStream(
                        () -> new java.io.ByteArrayInputStream(big)))
                .timeout(Duration.ofSeconds(20))
                .build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(response.statusCode()).isEqualTo(413);
  }

  /** A body that is not JSON answers 400 with Jackson's line and column. */
  @Test
  void invoke_badJson_returns400WithLocation() throws Exception {
    start();

    HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke", "{\"a\": \n nope}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(json(response).get("error").asText())
        .startsWith("request body is not JSON: ")
        .contains("line 2, column");
  }
}
