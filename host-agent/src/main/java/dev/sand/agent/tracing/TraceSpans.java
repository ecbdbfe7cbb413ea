package dev.sand.agent.tracing;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.contracts.ExecutionResult;
import dev.sand.contracts.TraceDocument;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.StatusData;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The spans in a result document's {@code trace} (decision 0019): one per grain run on the path to
 * the result, each a {@code TraceSpan} of frontend/openapi.yaml (keys: {@link TraceDocument}, times
 * in epoch seconds), and the document's {@code trace_id}. The document was written by a tenant's
 * grain instance: a span whose ids or times are malformed is left out, never thrown at the caller.
 * Stateless.
 */
final class TraceSpans {
  /** Spans exported per execution at most (a long loop would otherwise flood the collector). */
  static final int MAX_SPANS = 1000;

  private static final Pattern TRACE_ID = Pattern.compile("[0-9a-f]{32}");
  private static final Pattern SPAN_ID = Pattern.compile("[0-9a-f]{16}");
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_-]{0,127}");
  private static final AttributeKey<String> APP = AttributeKey.stringKey("sand.app");
  private static final AttributeKey<String> GRAIN = AttributeKey.stringKey("sand.grain");
  private static final AttributeKey<String> KIND = AttributeKey.stringKey("sand.event_kind");
  private static final AttributeKey<String> EXECUTION = AttributeKey.stringKey("sand.execution_id");
  private static final AttributeKey<Double> QUEUED_S = AttributeKey.doubleKey("sand.queued_s");

  private TraceSpans() {}

  /**
   * The spans of {@code document} (a parsed result document), empty when it has no trace id.
   *
   * @param app the execution's app, checked by the caller
   * @param failed whether the execution failed (its last span gets status ERROR)
   */
  static List<GrainSpan> of(
      JsonNode document, String app, String executionId, boolean failed, Resource resource) {
    JsonNode trace = document.path(ExecutionResult._Fields.TRACE.getFieldName());
    String traceId = trace.path(TraceDocument.TRACE_ID).asText("");
    JsonNode spans = trace.path(TraceDocument.SPANS);
    if (!TRACE_ID.matcher(traceId).matches() || !spans.isArray()) {
      return List.of();
    }
    List<GrainSpan> out = new ArrayList<>();
    for (int i = 0; i < spans.size() && out.size() < MAX_SPANS; i++) {
      JsonNode span = spans.get(i);
      String spanId = span.path(TraceDocument.SPAN_ID).asText("");
      String parentId = span.path(TraceDocument.PARENT_ID).asText("");
      String grain = span.path(TraceDocument.GRAIN).asText("");
      if (!SPAN_ID.matcher(spanId).matches() || !NAME.matcher(grain).matches()) {
        continue;
      }
      long start = nanos(span.path(TraceDocument.TOOK));
      long end = nanos(span.path(TraceDocument.PUSHED));
      if (end <= 0) {
        end = nanos(span.path(TraceDocument.END));
      }
      if (start <= 0 || end < start) {
        continue;
      }
      SpanContext parent =
          SPAN_ID.matcher(parentId).matches()
              ? SpanContext.createFromRemoteParent(
                  traceId, parentId, TraceFlags.getSampled(), TraceState.getDefault())
              : SpanContext.getInvalid();
      Attributes attributes =
          Attributes.builder()
              .put(APP, app)
              .put(GRAIN, grain)
              .put(KIND, span.path(TraceDocument.KIND).asText(""))
              .put(EXECUTION, executionId)
              .put(
                  QUEUED_S,
                  Math.max(0, start / 1e9 - span.path(TraceDocument.QUEUED).asDouble(start / 1e9)))
              .build();
      boolean last = i == spans.size() - 1;
      out.add(
          new GrainSpan(
              grain,
              SpanContext.create(traceId, spanId, TraceFlags.getSampled(), TraceState.getDefault()),
              parent,
              start,
              end,
              attributes,
              failed && last ? StatusData.error() : StatusData.unset(),
              resource));
    }
    return out;
  }

  /** Epoch seconds (a JSON number) as epoch nanoseconds; 0 when it is not a positive number. */
  private static long nanos(JsonNode seconds) {
    if (!seconds.isNumber() || seconds.asDouble() <= 0 || seconds.asDouble() > 1e11) {
      return 0;
    }
    return (long) (seconds.asDouble() * 1e9);
  }
}
