package dev.sand.frontend;

import dev.sand.config.ClusterConfig;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpMethod;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * The frontend's routes. Today: {@code GET /health}. Every other path answers 404 and every other
 * method 405, as JSON {@code {"error": ...}}.
 *
 * <p>Non-blocking: no route waits on I/O yet. Invocation routes that wait for results must move to
 * a blocking handler or answer asynchronously.
 */
final class Routes extends Handler.Abstract.NonBlocking {
  private final Supplier<Map<String, Object>> identity;

  Routes(Supplier<Map<String, Object>> identity, ClusterConfig config) {
    this.identity = identity;
    // config is kept in the signature: the invocation routes need ports, payload limit and host id
    if (config == null) {
      throw new IllegalArgumentException("config must not be null");
    }
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    String path = Request.getPathInContext(request);
    if ("/health".equals(path)) {
      if (!HttpMethod.GET.is(request.getMethod()) && !HttpMethod.HEAD.is(request.getMethod())) {
        response.getHeaders().put(HttpHeader.ALLOW, "GET, HEAD");
        JsonHttp.error(
            response,
            callback,
            HttpStatus.METHOD_NOT_ALLOWED_405,
            request.getMethod() + " not allowed on /health");
        return true;
      }
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("status", "ok");
      body.putAll(identity.get());
      JsonHttp.send(response, callback, HttpStatus.OK_200, body);
      return true;
    }
    JsonHttp.error(response, callback, HttpStatus.NOT_FOUND_404, "no such path: " + path);
    return true;
  }
}
