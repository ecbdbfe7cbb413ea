package dev.sand.agent.bus;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CallbackHeaderTest {
  /** The worker's header reads into its three fields. */
  @Test
  void parse_wellFormed_readsFields() {
    assertThat(
            CallbackHeader.parse(
                "{\"token\": \"a.b\", \"timeout_at\": 1700000000000, \"heartbeat_ms\": 30000}"))
        .isEqualTo(new CallbackHeader("a.b", 1_700_000_000_000L, 30_000));
  }

  /** A malformed header is refused naming what is wrong (the task then fails States.Runtime). */
  @Test
  void parse_malformed_isRefusedNamingTheField() {
    assertThatThrownBy(() -> CallbackHeader.parse("not json")).hasMessageContaining("not JSON");
    assertThatThrownBy(() -> CallbackHeader.parse("[1]")).hasMessageContaining("JSON object");
    assertThatThrownBy(() -> CallbackHeader.parse("{\"timeout_at\": 1, \"heartbeat_ms\": 0}"))
        .hasMessageContaining("token");
    assertThatThrownBy(() -> CallbackHeader.parse("{\"token\": \"t\", \"heartbeat_ms\": 0}"))
        .hasMessageContaining("timeout_at");
    assertThatThrownBy(
            () ->
                CallbackHeader.parse(
                    "{\"token\": \"t\", \"timeout_at\": 1, \"heartbeat_ms\": 1.5}"))
        .hasMessageContaining("heartbeat_ms");
    assertThatThrownBy(
            () ->
                CallbackHeader.parse("{\"token\": \"t\", \"timeout_at\": 1, \"heartbeat_ms\": -1}"))
        .hasMessageContaining("heartbeat_ms must be >= 0");
  }

  /** Only timers carrying sand-callback wait for a token; plain ASL Wait timers do not. */
  @Test
  void waitsForToken_onlyWithCallbackHeader() {
    EventMessage plain = new EventMessage().setKind(EventKind.TIMER);
    EventMessage other = new EventMessage().setKind(EventKind.TIMER).setHeaders(Map.of("x", "1"));
    Map<String, String> headers = new HashMap<>();
    headers.put("sand-callback", "{}");
    EventMessage callback = new EventMessage().setKind(EventKind.TIMER).setHeaders(headers);

    assertThat(CallbackWaits.waitsForToken(plain)).isFalse();
    assertThat(CallbackWaits.waitsForToken(other)).isFalse();
    assertThat(CallbackWaits.waitsForToken(callback)).isTrue();
  }
}
