package dev.sand.agent.tracing;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.sdk.resources.Resource;
import java.util.List;
import org.junit.jupiter.api.Test;

class TraceSpansTest {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final String TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";

  private static JsonNode doc(String spans) throws Exception {
    return MAPPER.readTree(
        "{\"trace\": {\"trace_id\": \"" + TRACE + "\", \"spans\": [" + spans + "]}}");
  }

  private static String span(String id, String parent, String grain, double took, double pushed) {
    return String.format(
        java.util.Locale.ROOT,
        "{\"span_id\": \"%s\", \"parent_id\": %s, \"grain\": \"%s\", \"kind\": \"TASK\","
            + " \"queued\": %f, \"took\": %f, \"start\": %f, \"end\": %f, \"pushed\": %f}",
        id,
        parent == null ? "null" : "\"" + parent + "\"",
        grain,
        took - 0.001,
        took,
        took,
        pushed,
        pushed);
  }

  /** Each span of the document becomes a span of the trace, linked to its parent. */
  @Test
  void of_chain_linksParents() throws Exception {
    JsonNode document =
        doc(
            span("00f067aa0ba902b7", "b7ad6b7169203331", "first", 1700000000.5, 1700000000.6)
                + ","
                + span("1111111111111111", "00f067aa0ba902b7", "second", 1700000000.7, 1700000001));
    List<GrainSpan> spans = TraceSpans.of(document, "shop", "e1", true, Resource.empty());
    assertThat(spans).extracting(GrainSpan::getName).containsExactly("first", "second");
    assertThat(spans.get(0).getTraceId()).isEqualTo(TRACE);
    assertThat(spans.get(0).getParentSpanId()).isEqualTo("b7ad6b7169203331");
    assertThat(spans.get(1).getParentSpanId()).isEqualTo("00f067aa0ba902b7");
    assertThat(spans.get(1).getStartEpochNanos()).isEqualTo(1_700_000_000_700_000_000L);
    assertThat(spans.get(0).getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
    assertThat(spans.get(1).getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
  }

  /** Malformed spans (tenant input) are left out; a document without trace id has none. */
  @Test
  void of_malformed_leftOut() throws Exception {
    JsonNode document =
        doc(
            span("XYZ", null, "bad-id", 1700000000.5, 1700000000.6)
                + ","
                + span("2222222222222222", null, "a b", 1700000000.5, 1700000000.6)
                + ","
                + span("3333333333333333", null, "backwards", 1700000001, 1700000000)
                + ","
                + span("4444444444444444", "nope", "ok", 1700000000.5, 1700000000.6));
    List<GrainSpan> spans = TraceSpans.of(document, "shop", "e1", false, Resource.empty());
    assertThat(spans).extracting(GrainSpan::getName).containsExactly("ok");
    assertThat(spans.get(0).getParentSpanContext().isValid()).isFalse();
    assertThat(
            TraceSpans.of(
                MAPPER.readTree("{\"trace\": {\"spans\": []}}"), "a", "e", false, Resource.empty()))
        .isEmpty();
    assertThat(TraceSpans.of(MAPPER.readTree("[1]"), "a", "e", false, Resource.empty())).isEmpty();
  }
}
