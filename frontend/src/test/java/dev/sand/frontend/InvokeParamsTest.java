package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class InvokeParamsTest {
  /** Without mode a call is synchronous; async and sync are the only words. */
  @Test
  void mode_defaultSync_unknownIs400() throws Exception {
    assertThat(InvokeParams.mode(null)).isTrue();
    assertThat(InvokeParams.mode("async")).isFalse();
    assertThatThrownBy(() -> InvokeParams.mode("later"))
        .isInstanceOfSatisfying(Refused.class, e -> assertThat(e.status).isEqualTo(400))
        .hasMessage("mode must be sync or async, got 'later'");
  }

  /** The local queue is the default way in; kafka is the other, anything else is refused. */
  @Test
  void via_defaultLocal_unknownIs400() throws Exception {
    assertThat(InvokeParams.via(null)).isFalse();
    assertThat(InvokeParams.via("kafka")).isTrue();
    assertThatThrownBy(() -> InvokeParams.via("http"))
        .isInstanceOfSatisfying(Refused.class, e -> assertThat(e.status).isEqualTo(400));
  }

  /** timeout_s takes whole seconds within 1..3600; a word and a number outside get one message. */
  @Test
  void timeout_boundsAndDefault() throws Exception {
    assertThat(InvokeParams.timeout(null)).isEqualTo(InvokeParams.DEFAULT_SYNC_TIMEOUT);
    assertThat(InvokeParams.timeout("3600")).isEqualTo(Duration.ofSeconds(3600));
    assertThatThrownBy(() -> InvokeParams.timeout("0"))
        .hasMessage("timeout_s must be an integer 1..3600, got '0'");
    assertThatThrownBy(() -> InvokeParams.timeout("soon"))
        .hasMessage("timeout_s must be an integer 1..3600, got 'soon'");
  }

  /** No name is no idempotent start; a name that breaks the rules is 400. */
  @Test
  void name_absentIsNull_invalidIs400() throws Exception {
    assertThat(InvokeParams.name(null)).isNull();
    assertThatThrownBy(() -> InvokeParams.name(""))
        .isInstanceOfSatisfying(Refused.class, e -> assertThat(e.status).isEqualTo(400));
  }
}
