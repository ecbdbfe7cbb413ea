package dev.sand.agent.bus;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.bus.EventCodec;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.Topics;
import dev.sand.contracts.contractsConstants;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DataHeaderFlagTest {
  private static EventMessage finished(Map<String, String> headers) {
    EventMessage event =
        new EventMessage()
            .setEvent_id("e1")
            .setExecution_id("x1")
            .setApp("thumbs")
            .setTarget_grain("resize")
            .setKind(EventKind.TASK)
            .setFlag(EventFlag.FINISHED);
    if (headers != null) {
      event.setHeaders(new HashMap<>(headers));
    }
    return event;
  }

  /** The instance's data metadata moves from the event into a record header of the flag. */
  @Test
  void withDataHeader_movesTheEventHeaderIntoARecordHeader() {
    String written = "[{\"key\":\"a\",\"deleted\":true}]";
    EventMessage event =
        finished(Map.of(Topics.DATA_HEADER, written, contractsConstants.HEADER_TRACE, "[]"));
    FlagGate.Outgoing raw = new FlagGate.Outgoing("t", "x1", EventCodec.encode(event));
    FlagGate.Outgoing out = EventLoops.withDataHeader(raw, EventCodec.decode(raw.value()));
    assertThat(new String(out.headers().get(Topics.DATA_HEADER), StandardCharsets.UTF_8))
        .isEqualTo(written);
    EventMessage sent = EventCodec.decode(out.value());
    assertThat(sent.getHeaders()).containsOnlyKeys(contractsConstants.HEADER_TRACE);
    assertThat(sent.getFlag()).isEqualTo(EventFlag.FINISHED);
    assertThat(out.topic()).isEqualTo("t");
    assertThat(out.key()).isEqualTo("x1");
  }

  /** A flag without data metadata goes out unchanged (no re-encoding). */
  @Test
  void withDataHeader_noMetadata_recordUnchanged() {
    FlagGate.Outgoing raw = new FlagGate.Outgoing("t", "x1", EventCodec.encode(finished(null)));
    assertThat(EventLoops.withDataHeader(raw, EventCodec.decode(raw.value()))).isSameAs(raw);
  }
}
