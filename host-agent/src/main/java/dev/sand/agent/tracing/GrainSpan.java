package dev.sand.agent.tracing;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.data.StatusData;
import java.util.List;

/**
 * One grain run of a finished execution as an OpenTelemetry span: its ids were chosen by the grain
 * instance (header {@code sand-traceparent}, decision 0019), its times are the instance's, so it is
 * exported as finished data rather than recorded through a tracer.
 *
 * @param parent the span of the grain run (or the caller's span) that produced its event
 */
record GrainSpan(
    String name,
    SpanContext context,
    SpanContext parent,
    long startEpochNanos,
    long endEpochNanos,
    Attributes attributes,
    StatusData status,
    Resource resource)
    implements SpanData {
  static final InstrumentationScopeInfo SCOPE = InstrumentationScopeInfo.create("dev.sand.agent");

  @Override
  public String getName() {
    return name;
  }

  @Override
  public SpanKind getKind() {
    return SpanKind.INTERNAL;
  }

  @Override
  public SpanContext getSpanContext() {
    return context;
  }

  @Override
  public SpanContext getParentSpanContext() {
    return parent;
  }

  @Override
  public StatusData getStatus() {
    return status;
  }

  @Override
  public long getStartEpochNanos() {
    return startEpochNanos;
  }

  @Override
  public Attributes getAttributes() {
    return attributes;
  }

  @Override
  public List<EventData> getEvents() {
    return List.of();
  }

  @Override
  public List<LinkData> getLinks() {
    return List.of();
  }

  @Override
  public long getEndEpochNanos() {
    return endEpochNanos;
  }

  @Override
  public boolean hasEnded() {
    return true;
  }

  @Override
  public int getTotalRecordedEvents() {
    return 0;
  }

  @Override
  public int getTotalRecordedLinks() {
    return 0;
  }

  @Override
  public int getTotalAttributeCount() {
    return attributes.size();
  }

  @Override
  @Deprecated
  @SuppressWarnings("deprecation") // the interface still declares it; exporters use the scope
  public io.opentelemetry.sdk.common.InstrumentationLibraryInfo getInstrumentationLibraryInfo() {
    return io.opentelemetry.sdk.common.InstrumentationLibraryInfo.create("dev.sand.agent", null);
  }

  @Override
  public InstrumentationScopeInfo getInstrumentationScopeInfo() {
    return SCOPE;
  }

  @Override
  public Resource getResource() {
    return resource;
  }
}
