package dev.sand.frontend;

import dev.sand.contracts.Caller;
import dev.sand.contracts.Tokens;
import dev.sand.contracts.contractsConstants;
import dev.sand.service.JsonHttp;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * {@code GET /metrics}: the frontend's metrics in the Prometheus text format (decision 0019).
 *
 * <p>Metrics name apps, so a scrape needs either the agents' secret ({@code X-Sand-Internal}: what
 * a Prometheus scraping the frontend's own port is given) or an admin's bearer token (through
 * nginx). Anything else gets 401 (403 for a user's token) and is counted as an auth failure.
 * Thread-safe.
 */
final class MetricsRoute {
  private static final PrometheusTextFormatWriter WRITER = PrometheusTextFormatWriter.create();

  private final PrometheusRegistry registry;
  private final FrontendMetrics metrics;
  private final Authenticator auth;
  private final String secret;

  MetricsRoute(FrontendMetrics metrics, Authenticator auth, String secret) {
    this.registry = metrics.registry;
    this.metrics = metrics;
    this.auth = auth;
    this.secret = secret;
  }

  void handle(Request request, Response response, Callback callback) {
    if (!Tokens.sameSecret(secret, request.getHeaders().get(contractsConstants.HEADER_INTERNAL))) {
      String authorization = request.getHeaders().get(HttpHeader.AUTHORIZATION);
      Caller caller;
      try {
        caller = auth.authenticate(authorization);
      } catch (Authenticator.Refused e) {
        metrics.authFailed(FrontendMetrics.SCRAPE_REFUSED);
        response.getHeaders().put(HttpHeader.WWW_AUTHENTICATE, "Bearer realm=\"sand\"");
        JsonHttp.error(
            response,
            callback,
            HttpStatus.UNAUTHORIZED_401,
            "/metrics needs an admin's bearer token or SAND's internal secret ("
                + contractsConstants.HEADER_INTERNAL
                + "): "
                + e.getMessage());
        return;
      } catch (Authenticator.Unavailable e) {
        JsonHttp.error(response, callback, HttpStatus.SERVICE_UNAVAILABLE_503, e.getMessage());
        return;
      }
      if (!caller.admin()) {
        metrics.authFailed(FrontendMetrics.SCRAPE_REFUSED);
        JsonHttp.error(
            response,
            callback,
            HttpStatus.FORBIDDEN_403,
            "/metrics is for admins: user '" + caller.user() + "' is not one");
        return;
      }
    }
    ByteArrayOutputStream body = new ByteArrayOutputStream(8192);
    try {
      WRITER.write(body, registry.scrape());
    } catch (IOException e) {
      callback.failed(e); // a ByteArrayOutputStream does not throw
      return;
    }
    response.setStatus(HttpStatus.OK_200);
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, WRITER.getContentType());
    response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-store");
    response.write(true, ByteBuffer.wrap(body.toByteArray()), callback);
  }
}
