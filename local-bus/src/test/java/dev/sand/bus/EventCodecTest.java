package dev.sand.bus;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EventCodecTest {
  private static EventMessage sample() {
    return new EventMessage()
        .setExecution_id("exec-1")
        .setApp("thumbs")
        .setWorkflow("main")
        .setSource_grain("fetch")
        .setTarget_grain("resize")
        .setPayload("{\"w\":64}".getBytes(StandardCharsets.UTF_8))
        .setToken("tok-opaque")
        .setFlag(EventFlag.PROCESSING)
        .setKind(EventKind.TASK)
        .setCreated_ms(1_700_000_000_123L)
        .setDeadline_ms(1_700_000_060_000L)
        .setAttempt(2)
        .setHost("host-1")
        .setReply_to("frontend-18081")
        .setError("")
        .setCause("")
        .setHeaders(Map.of("traceparent", "00-abc-def-01"));
  }

  /** Every field survives encode then decode. */
  @Test
  void roundTrip_preservesEveryField() {
    EventMessage original = sample();

    EventMessage decoded = EventCodec.decode(EventCodec.encode(original));

    assertThat(decoded).isEqualTo(original);
    assertThat(decoded.getFlag()).isEqualTo(EventFlag.PROCESSING);
    assertThat(new String(decoded.getPayload(), StandardCharsets.UTF_8)).isEqualTo("{\"w\":64}");
  }

  /** Unset optional headers stay unset, so Python sees None rather than an empty map. */
  @Test
  void roundTrip_withoutHeaders_keepsThemUnset() {
    EventMessage original = sample().setHeaders(null);

    EventMessage decoded = EventCodec.decode(EventCodec.encode(original));

    assertThat(decoded.isSetHeaders()).isFalse();
  }

  /** The stored enum values are the IDL's (1-based), the contract with Python. */
  @Test
  void flagValues_matchIdl() {
    assertThat(EventFlag.QUEUED.getValue()).isEqualTo(1);
    assertThat(EventFlag.RECOVERED.getValue()).isEqualTo(5);
    assertThat(EventKind.TIMER.getValue()).isEqualTo(5);
  }

  /**
   * Bytes produced by the Python side (thrift's TCompactProtocol on the gen-py classes) decode to
   * the same fields. Fixture made with: EventMessage(execution_id='e1', app='a', payload=b'{}',
   * flag=PROCESSING, kind=TASK, created_ms=5, headers={'k': 'v'}).
   */
  @Test
  void decode_bytesFromPython_readsFields() {
    byte[] fromPython =
        HexFormat.of().parseHex("1802653118016148027b7d25041504160a7b0188016b017600");

    EventMessage decoded = EventCodec.decode(fromPython);

    assertThat(decoded.getExecution_id()).isEqualTo("e1");
    assertThat(decoded.getApp()).isEqualTo("a");
    assertThat(decoded.getPayload()).isEqualTo("{}".getBytes(StandardCharsets.UTF_8));
    assertThat(decoded.getFlag()).isEqualTo(EventFlag.PROCESSING);
    assertThat(decoded.getKind()).isEqualTo(EventKind.TASK);
    assertThat(decoded.getCreated_ms()).isEqualTo(5);
    assertThat(decoded.getHeaders()).containsExactly(Map.entry("k", "v"));
    assertThat(decoded.isSetWorkflow()).isFalse();
  }

  /** Garbage is refused with a codec exception, not a Thrift or runtime one. */
  @Test
  void decode_garbage_throwsCodecException() {
    byte[] garbage = new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f, 0x01};

    assertThatThrownBy(() -> EventCodec.decode(garbage))
        .isInstanceOf(EventCodecException.class)
        .hasMessageContaining("cannot decode event");
  }

  /** A truncated message is refused rather than decoded partially. */
  @Test
  void decode_truncated_throwsCodecException() {
    byte[] bytes = EventCodec.encode(sample());

    assertThatThrownBy(() -> EventCodec.decode(Arrays.copyOf(bytes, bytes.length / 2)))
        .isInstanceOf(EventCodecException.class);
  }
}
