package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sand.contracts.TaskToken;
import dev.sand.contracts.TaskTokens;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class TaskCallbacksTest {
  private static final String TOKEN =
      TaskTokens.mint(
          TaskTokens.appKey("s", "thumbs"), new TaskToken("thumbs", "exec-1", "exec-1/A#1"));

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  private static int status(ThrowingForward call) {
    try {
      call.run();
    } catch (Refused e) {
      return e.status;
    }
    throw new AssertionError("not refused");
  }

  private interface ThrowingForward {
    void run() throws Refused;
  }

  /** Success sends the agent a SUCCEEDED completion with {"output": ...} as its outcome. */
  @Test
  void forward_success_completesWithOutput() throws Refused {
    TaskCallbacks.Forward forward =
        TaskCallbacks.forward(TOKEN, "success", bytes("{\"output\": {\"approved\": true}}"));

    assertThat(forward.path()).isEqualTo("/internal/tasks/complete");
    assertThat(forward.body().toString())
        .isEqualTo(
            "{\"token\":\""
                + TOKEN
                + "\",\"status\":\"SUCCEEDED\",\"outcome\":{\"output\":{\"approved\":true}}}");
  }

  /** An output of null is an output: the key is what must be there. */
  @Test
  void forward_successWithNullOutput_isAccepted() throws Refused {
    assertThat(
            TaskCallbacks.forward(TOKEN, "success", bytes("{\"output\": null}"))
                .body()
                .path("outcome")
                .has("output"))
        .isTrue();
  }

  /** Success without "output", or not a JSON object, is 400 naming it. */
  @Test
  void forward_successWithoutOutput_is400() {
    assertThatThrownBy(() -> TaskCallbacks.forward(TOKEN, "success", bytes("{\"out\": 1}")))
        .hasMessageContaining("output is required");
    assertThatThrownBy(() -> TaskCallbacks.forward(TOKEN, "success", bytes("[1]")))
        .hasMessageContaining("JSON object");
    assertThatThrownBy(() -> TaskCallbacks.forward(TOKEN, "success", bytes("{")))
        .hasMessageContaining("not JSON");
    assertThat(status(() -> TaskCallbacks.forward(TOKEN, "success", bytes("")))).isEqualTo(400);
  }

  /** Failure takes optional error and cause; missing ones are empty strings. */
  @Test
  void forward_failure_completesWithErrorAndCause() throws Refused {
    assertThat(
            TaskCallbacks.forward(TOKEN, "failure", bytes("{\"error\": \"Rejected\"}"))
                .body()
                .path("outcome")
                .toString())
        .isEqualTo("{\"error\":\"Rejected\",\"cause\":\"\"}");
    TaskCallbacks.Forward empty = TaskCallbacks.forward(TOKEN, "failure", bytes(""));
    assertThat(empty.body().path("status").asText()).isEqualTo("FAILED");
    assertThat(empty.body().path("outcome").toString())
        .isEqualTo("{\"error\":\"\",\"cause\":\"\"}");
  }

  /** An error over 256 characters, a cause over 32768, or a non-string is 400 naming it. */
  @Test
  void forward_failureOverLimits_is400() {
    String longError = "{\"error\": \"" + "e".repeat(257) + "\"}";
    String longCause = "{\"cause\": \"" + "c".repeat(32769) + "\"}";

    assertThatThrownBy(() -> TaskCallbacks.forward(TOKEN, "failure", bytes(longError)))
        .hasMessageContaining("error is 257 characters");
    assertThatThrownBy(() -> TaskCallbacks.forward(TOKEN, "failure", bytes(longCause)))
        .hasMessageContaining("cause is 32769 characters");
    assertThatThrownBy(() -> TaskCallbacks.forward(TOKEN, "failure", bytes("{\"error\": 5}")))
        .hasMessageContaining("error must be a string");
  }

  /** A heartbeat forwards the token only, whatever body came. */
  @Test
  void forward_heartbeat_sendsTokenOnly() throws Refused {
    TaskCallbacks.Forward forward = TaskCallbacks.forward(TOKEN, "heartbeat", bytes("junk"));

    assertThat(forward.path()).isEqualTo("/internal/tasks/heartbeat");
    assertThat(forward.body().toString()).isEqualTo("{\"token\":\"" + TOKEN + "\"}");
  }

  /** A token that is not one by its shape is 400 before any agent is asked. */
  @Test
  void claims_malformedToken_is400() throws Refused {
    assertThat(TaskCallbacks.claims(TOKEN).app()).isEqualTo("thumbs");
    assertThat(status(() -> TaskCallbacks.claims("nope"))).isEqualTo(400);
    assertThat(status(() -> TaskCallbacks.claims("x".repeat(3000)))).isEqualTo(400);
  }
}
