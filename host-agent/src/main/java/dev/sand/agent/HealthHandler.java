package dev.sand.agent;

import dev.sand.service.JsonHttp;
import java.util.LinkedHashMap;
import java.util.List;
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
 * {@code GET /health} ({@link AgentRoutes}). Answers from the monitors' last snapshots, so it never
 * blocks on a dependency.
 *
 * <p>200 when every dependency is ok or disabled; 503 otherwise, naming the ones that are not in
 * {@code unavailable} and {@code error}. Other methods get 405, all as JSON.
 */
final class HealthHandler extends Handler.Abstract.NonBlocking {
  private final Supplier<Map<String, Object>> identity;
  private final Supplier<List<DependencyMonitor.Snapshot>> snapshots;
  private final Supplier<Map<String, Long>> counters;

  /**
   * @param identity service, host id, port, pid: the fields every answer starts with
   * @param snapshots the monitors' current states, in display order
   * @param counters what the agent's loops have done since start (events backed up, replayed...)
   */
  HealthHandler(
      Supplier<Map<String, Object>> identity,
      Supplier<List<DependencyMonitor.Snapshot>> snapshots,
      Supplier<Map<String, Long>> counters) {
    this.identity = identity;
    this.snapshots = snapshots;
    this.counters = counters;
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
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
    Map<String, Object> dependencies = new LinkedHashMap<>();
    List<String> unavailable = new java.util.ArrayList<>();
    StringBuilder error = new StringBuilder();
    for (DependencyMonitor.Snapshot s : snapshots.get()) {
      dependencies.put(s.name(), Map.of("status", s.status().word(), "detail", s.detail()));
      if (!s.status().healthy()) {
        unavailable.add(s.name());
        error.append(error.length() == 0 ? "" : "; ");
        error.append(s.name()).append(' ').append(s.status().word()).append(": ");
        error.append(s.detail());
      }
    }
    body.put("status", unavailable.isEmpty() ? "ok" : "unavailable");
    body.putAll(identity.get());
    body.put("dependencies", dependencies);
    body.put("counters", new java.util.TreeMap<>(counters.get()));
    if (!unavailable.isEmpty()) {
      body.put("unavailable", unavailable);
      body.put("error", error.toString());
    }
    JsonHttp.send(
        response,
        callback,
        unavailable.isEmpty() ? HttpStatus.OK_200 : HttpStatus.SERVICE_UNAVAILABLE_503,
        body);
    return true;
  }
}
