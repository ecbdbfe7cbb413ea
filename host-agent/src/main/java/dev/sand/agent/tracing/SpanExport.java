package dev.sand.agent.tracing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.config.TracingConfig;
import dev.sand.contracts.Topics;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporter;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Exports the spans of traced executions over OTLP/HTTP (decision 0019). Grain workers have no
 * network, so the host agent that publishes an execution's RESULT/ERROR exports the spans its
 * result document carries ({@link TraceSpans}). Only events with the {@code sand-traceparent}
 * header are looked at: an untraced result costs one map lookup.
 *
 * <p>{@link #finished} never blocks: traced results wait in a bounded queue (dropped, and counted,
 * when it is full) for one exporter thread, which sends them in batches. Thread-safe.
 */
public final class SpanExport implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SpanExport.class);
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final int QUEUE = 1024;
  private static final int BATCH = 64;

  private final SpanExporter exporter;
  private final Resource resource;
  private final BlockingQueue<EventMessage> queue = new ArrayBlockingQueue<>(QUEUE);
  private final AtomicLong exported = new AtomicLong();
  private final AtomicLong dropped = new AtomicLong();
  private final Thread thread;
  private volatile boolean running = true;

  SpanExport(SpanExporter exporter, String hostId) {
    this.exporter = exporter;
    this.resource =
        Resource.getDefault()
            .merge(
                Resource.create(
                    Attributes.of(
                        AttributeKey.stringKey("service.name"),
                        "sand",
                        AttributeKey.stringKey("host.id"),
                        hostId)));
    this.thread = new Thread(this::exportLoop, "span-export");
    thread.setDaemon(true);
    thread.start();
  }

  /** The export {@code config} asks for, or null when it names no endpoint. */
  public static SpanExport create(TracingConfig config, String hostId) {
    if (config.otlpEndpoint().isEmpty()) {
      return null;
    }
    URI endpoint = config.otlpEndpoint().get();
    OtlpHttpSpanExporter exporter =
        OtlpHttpSpanExporter.builder()
            .setEndpoint(endpoint.toString())
            .setTimeout(Duration.ofSeconds(10))
            .build();
    LOG.atInfo().addKeyValue("endpoint", endpoint).log("exporting spans over OTLP/HTTP");
    return new SpanExport(exporter, hostId);
  }

  /** Queues the spans of {@code event} when it is a traced RESULT or ERROR; never blocks. */
  public void finished(EventMessage event) {
    if (!event.isSetHeaders() || !event.getHeaders().containsKey(Topics.TRACEPARENT_HEADER)) {
      return;
    }
    if (event.getKind() != EventKind.RESULT && event.getKind() != EventKind.ERROR) {
      return;
    }
    if (!queue.offer(event)) {
      dropped.incrementAndGet();
    }
  }

  /** Spans sent to the collector, and executions whose spans were dropped (queue full). */
  public java.util.Map<String, Long> counters() {
    return java.util.Map.of("spans_exported", exported.get(), "traces_dropped", dropped.get());
  }

  private void exportLoop() {
    List<EventMessage> batch = new ArrayList<>();
    while (running) {
      try {
        EventMessage first = queue.poll(500, TimeUnit.MILLISECONDS);
        if (first == null) {
          continue;
        }
        batch.add(first);
        queue.drainTo(batch, BATCH - 1);
        List<SpanData> spans = new ArrayList<>();
        for (EventMessage event : batch) {
          spans.addAll(spans(event));
        }
        batch.clear();
        if (!spans.isEmpty()) {
          boolean ok = exporter.export(spans).join(15, TimeUnit.SECONDS).isSuccess();
          if (ok) {
            exported.addAndGet(spans.size());
          } else {
            LOG.atWarn().addKeyValue("spans", spans.size()).log("span export failed");
          }
        }
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) {
        batch.clear();
        LOG.atWarn().addKeyValue("error", e.toString()).log("span export error; going on");
      }
    }
  }

  private List<GrainSpan> spans(EventMessage event) {
    JsonNode document;
    try {
      document = MAPPER.readTree(event.getPayload());
    } catch (IOException e) {
      return List.of(); // not JSON: a tenant's forgery, or nothing to export
    }
    if (document == null) {
      return List.of();
    }
    return TraceSpans.of(
        document,
        event.getApp(),
        event.getExecution_id(),
        event.getKind() == EventKind.ERROR,
        resource);
  }

  /** Stops the exporter thread and flushes what the exporter holds; never throws. */
  @Override
  public void close() {
    running = false;
    thread.interrupt();
    try {
      exporter.shutdown().join(5, TimeUnit.SECONDS);
    } catch (RuntimeException e) {
      LOG.atWarn().addKeyValue("error", e.toString()).log("span exporter shutdown failed");
    }
  }
}
