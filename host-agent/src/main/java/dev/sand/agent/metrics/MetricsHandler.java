package dev.sand.agent.metrics;

import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * {@code GET /metrics} of a host agent: {@link AgentMetrics} in the Prometheus text format. The
 * agent's router has checked the caller's secret before (decision 0017): only SAND's own services
 * and a Prometheus given the secret scrape it. Thread-safe.
 */
public final class MetricsHandler extends Handler.Abstract {
  /** The path it serves. */
  public static final String PATH = "/metrics";

  private static final PrometheusTextFormatWriter WRITER = PrometheusTextFormatWriter.create();

  private final AgentMetrics metrics;

  public MetricsHandler(AgentMetrics metrics) {
    this.metrics = metrics;
  }

  /** Answers the request (405 for anything but GET); always returns true. */
  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    if (!"GET".equals(request.getMethod())) {
      response.setStatus(HttpStatus.METHOD_NOT_ALLOWED_405);
      response.getHeaders().put(HttpHeader.ALLOW, "GET");
      callback.succeeded();
      return true;
    }
    ByteArrayOutputStream body = new ByteArrayOutputStream(16384);
    try {
      WRITER.write(body, metrics.registry().scrape());
    } catch (IOException | RuntimeException e) {
      response.setStatus(HttpStatus.INTERNAL_SERVER_ERROR_500);
      response.write(
          true,
          ByteBuffer.wrap(("metrics: " + e).getBytes(java.nio.charset.StandardCharsets.UTF_8)),
          callback);
      return true;
    }
    response.setStatus(HttpStatus.OK_200);
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, WRITER.getContentType());
    response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-store");
    response.write(true, ByteBuffer.wrap(body.toByteArray()), callback);
    return true;
  }
}
