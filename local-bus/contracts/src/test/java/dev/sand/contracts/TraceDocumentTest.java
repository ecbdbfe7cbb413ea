package dev.sand.contracts;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The keys Java reads from a result document's {@code trace} are the ones openapi.yaml declares in
 * {@code ExecutionTrace} and {@code TraceSpan} (the worker's side: {@code
 * tests/unit/worker/test_trace.py}).
 */
class TraceDocumentTest {
  private static final OpenApi API = OpenApi.load();

  @Test
  void traceKeys_areExecutionTracesProperties() {
    assertThat(Set.copyOf(TraceDocument.TRACE_KEYS))
        .isEqualTo(API.properties("ExecutionTrace"))
        .containsAll(API.required("ExecutionTrace"));
  }

  @Test
  void spanKeys_areTraceSpansProperties() {
    assertThat(Set.copyOf(TraceDocument.SPAN_KEYS)).isEqualTo(API.properties("TraceSpan"));
  }

  /** A constant added to the class but to neither list is checked all the same. */
  @Test
  void everyConstant_isInAList() throws IllegalAccessException {
    Set<String> listed = new HashSet<>(TraceDocument.TRACE_KEYS);
    listed.addAll(TraceDocument.SPAN_KEYS);
    assertThat(listed).isEqualTo(HistoryTypesTest.constants(TraceDocument.class));
  }
}
