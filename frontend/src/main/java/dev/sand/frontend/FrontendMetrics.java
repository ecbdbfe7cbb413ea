package dev.sand.frontend;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * One frontend's Prometheus metrics (decision 0019), served by {@link MetricsRoute}.
 *
 * <ul>
 *   <li>{@code sand_http_responses_total{status}}: every response, by status code
 *   <li>{@code sand_invocations_total{app,mode}}: accepted invocations (200 or 202), by app and
 *       mode (sync, async)
 *   <li>{@code sand_invocations_refused_total{app,status}}: invocations answered with an error
 *       ({@code app} is empty when no such app is deployed for the caller: an unknown name must not
 *       become a label)
 *   <li>{@code sand_invocation_duration_seconds{app,mode}}: from the request to its answer; for a
 *       synchronous call that is end to end (the result, or 202 after its timeout)
 *   <li>{@code sand_execution_controls_total{action,status}}: stops and redrives (a stopped
 *       execution ends here, ABORTED, not through a host agent)
 *   <li>{@code sand_auth_failures_total{reason}}: refused bearer tokens and refused scrapes
 * </ul>
 *
 * <p>Label values are bounded: apps that exist, two modes, status codes. Thread-safe; recording is
 * a few lock-free increments.
 */
final class FrontendMetrics {
  /** Reasons of {@code sand_auth_failures_total}. */
  static final String BAD_TOKEN = "token";

  static final String SCRAPE_REFUSED = "metrics";

  private static final double[] LATENCY_BOUNDS_S = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300
  };

  final PrometheusRegistry registry = new PrometheusRegistry();
  private final Counter responses =
      Counter.builder()
          .name("sand_http_responses")
          .help("HTTP responses of this frontend, by status code")
          .labelNames("status")
          .withoutExemplars()
          .register(registry);
  private final Counter invocations =
      Counter.builder()
          .name("sand_invocations")
          .help("Invocations accepted (200 or 202), by app and mode")
          .labelNames("app", "mode")
          .withoutExemplars()
          .register(registry);
  private final Counter refused =
      Counter.builder()
          .name("sand_invocations_refused")
          .help("Invocations answered with an error status; app is empty when it is not deployed")
          .labelNames("app", "status")
          .withoutExemplars()
          .register(registry);
  private final Histogram latency =
      Histogram.builder()
          .name("sand_invocation_duration_seconds")
          .help("Accepted invocations from request to answer (sync: end to end), by app and mode")
          .labelNames("app", "mode")
          .classicOnly()
          .classicUpperBounds(LATENCY_BOUNDS_S)
          .withoutExemplars()
          .register(registry);
  private final Counter controls =
      Counter.builder()
          .name("sand_execution_controls")
          .help(
              "Stops (ended ABORTED; they do not pass a host agent) and redrives of executions, by"
                  + " action and status code")
          .labelNames("action", "status")
          .withoutExemplars()
          .register(registry);
  private final Counter authFailures =
      Counter.builder()
          .name("sand_auth_failures")
          .help("Refused credentials: bearer tokens (token) and scrapes of /metrics (metrics)")
          .labelNames("reason")
          .withoutExemplars()
          .register(registry);

  /** Counts a refused credential; {@code reason} is one of the constants above. */
  void authFailed(String reason) {
    authFailures.labelValues(reason).inc();
  }

  /** {@code handler}, with each of its responses counted by status code. */
  Handler instrument(Handler handler) {
    return new Handler.Wrapper(handler) {
      @Override
      public boolean handle(Request request, Response response, Callback callback)
          throws Exception {
        return super.handle(request, response, counted(response, callback));
      }
    };
  }

  /**
   * {@code callback} of an invocation of {@code app}: when it completes, counts and times the
   * invocation by its response status.
   *
   * @param app the raw path segment (a label only when the answer shows the app exists)
   * @param mode the raw {@code mode} query parameter (null: sync)
   */
  Callback invocation(String app, String mode, Response response, Callback callback) {
    long started = System.nanoTime();
    String label =
        "async".equals(mode) ? "async" : mode == null || "sync".equals(mode) ? "sync" : "";
    return new Callback.Nested(callback) {
      @Override
      public void succeeded() {
        record();
        super.succeeded();
      }

      @Override
      public void failed(Throwable x) {
        record();
        super.failed(x);
      }

      private void record() {
        invoked(app, label, response.getStatus(), System.nanoTime() - started);
      }
    };
  }

  /**
   * Counts one invocation of {@code app} answered with {@code status} after {@code nanos}.
   *
   * @param mode {@code sync}, {@code async}, or "" (an invalid mode, answered 400)
   */
  void invoked(String app, String mode, int status, long nanos) {
    if (status == 200 || status == 202) {
      invocations.labelValues(app, mode).inc();
      latency.labelValues(app, mode).observe(nanos / 1e9);
    } else {
      // 404 and 401 are what an unknown (or another user's) app gets: no label from it
      refused
          .labelValues(status == 404 || status == 401 ? "" : app, Integer.toString(status))
          .inc();
    }
  }

  /**
   * {@code callback} of a stop or redrive ({@code action}): counted by its status when it
   * completes.
   */
  Callback control(String action, Response response, Callback callback) {
    return new Callback.Nested(callback) {
      @Override
      public void succeeded() {
        controls.labelValues(action, Integer.toString(response.getStatus())).inc();
        super.succeeded();
      }

      @Override
      public void failed(Throwable x) {
        controls.labelValues(action, Integer.toString(response.getStatus())).inc();
        super.failed(x);
      }
    };
  }

  /** Counts one response of this frontend. */
  void responded(int status) {
    responses.labelValues(Integer.toString(status)).inc();
  }

  private Callback counted(Response response, Callback callback) {
    return new Callback.Nested(callback) {
      @Override
      public void succeeded() {
        responded(response.getStatus());
        super.succeeded();
      }

      @Override
      public void failed(Throwable x) {
        responded(response.getStatus());
        super.failed(x);
      }
    };
  }
}
