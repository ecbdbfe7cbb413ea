package dev.sand.contracts;

import java.util.List;

/**
 * The JSON keys of a traced execution's {@code trace} in its result document (decision 0019), as
 * {@code frontend/openapi.yaml} declares them: {@code ExecutionTrace} and its spans' {@code
 * TraceSpan}. The grain workers write them ({@code sand_worker.trace}); Java reads them through
 * these constants, and {@code TraceDocumentTest} fails when one is not the document's.
 */
public final class TraceDocument {
  // ExecutionTrace
  public static final String FRONTEND_IN = "frontend_in";
  public static final String SPANS = "spans";
  public static final String TRACE_ID = "trace_id";

  // TraceSpan: ids, then times in epoch seconds
  public static final String SPAN_ID = "span_id";
  public static final String PARENT_ID = "parent_id";
  public static final String GRAIN = "grain";
  public static final String KIND = "kind";
  public static final String QUEUED = "queued";
  public static final String TOOK = "took";
  public static final String START = "start";
  public static final String END = "end";
  public static final String PUSHED = "pushed";

  /** The keys of {@code ExecutionTrace}. */
  public static final List<String> TRACE_KEYS = List.of(FRONTEND_IN, SPANS, TRACE_ID);

  /** The keys of {@code TraceSpan}. */
  public static final List<String> SPAN_KEYS =
      List.of(SPAN_ID, PARENT_ID, GRAIN, KIND, QUEUED, TOOK, START, END, PUSHED);

  private TraceDocument() {}
}
