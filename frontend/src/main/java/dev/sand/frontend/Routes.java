package dev.sand.frontend;

import dev.sand.bus.redis.LocalBusException;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.contracts.Caller;
import dev.sand.contracts.Names;
import dev.sand.contracts.Tokens;
import dev.sand.contracts.contractsConstants;
import dev.sand.service.InternalApi;
import dev.sand.service.JsonHttp;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.http.pathmap.MatchedResource;
import org.eclipse.jetty.http.pathmap.PathMappings;
import org.eclipse.jetty.http.pathmap.UriTemplatePathSpec;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * The frontend's routes (described in {@code frontend/openapi.yaml}):
 *
 * <p>Every route but {@code /health} needs a bearer token ({@link Authenticator}): 401 without a
 * valid one. A caller sees only the apps they may use ({@link Caller#mayUse}): another user's app
 * or execution answers 404 as a missing one does (decision 0017).
 *
 * <ul>
 *   <li>{@code GET /}: 302 to {@code /ui/}, the web GUI ({@link StaticUi}, which serves {@code
 *       /ui/...} before these routes; no token needed for either)
 *   <li>{@code GET /health}: 200, or 503 when Redis does not answer
 *   <li>{@code GET /metrics}: Prometheus metrics, with the agents' secret or an admin's token
 *       ({@link MetricsRoute})
 *   <li>{@code GET /v1/whoami}, {@code /v1/users...}, {@code /v1/tokens...}: forwarded to a host
 *       agent; a change flushes every frontend's token cache before it is answered
 *   <li>{@code POST /internal/auth/flush}: with the agents' secret only, drops the token cache
 *   <li>{@code POST /v1/apps/{app}/invoke}: {@link InvokeRoute}
 *   <li>{@code GET /v1/executions/{id}}, {@code .../history}: {@link ExecutionReads}
 *   <li>{@code GET /v1/executions}: forwarded to a host agent, which reads the execution records of
 *       Cassandra
 *   <li>{@code POST /v1/executions/{id}/stop}, {@code .../redrive}: {@link ExecutionControl}
 *   <li>{@code GET|POST /v1/apps} (a deploy, or with {@code dry_run=true} its validation only),
 *       {@code GET|DELETE /v1/apps/{app}}, {@code GET /v1/apps/{app}/logs}, {@code GET
 *       /v1/apps/{app}/workflows/{workflow}}: forwarded to the host agent by {@link AgentProxy}
 *   <li>{@code GET /v1/apps/{app}/triggers}, {@code POST /v1/apps/{app}/triggers/{name}/pause},
 *       {@code .../resume}: forwarded likewise (decision 0034; {@link #triggers})
 *   <li>{@code GET /v1/cluster}: every host with its sandboxes and workers ({@link ClusterRoute})
 *   <li>{@code POST /v1/tasks/{token}/success|failure|heartbeat}: task callbacks ({@link
 *       TaskCallbacks})
 * </ul>
 *
 * <p>The routes are one table ({@link #routes}) on Jetty's path mapping ({@code
 * UriTemplatePathSpec}). Every other path answers 404 (after the token check: without a token, 401)
 * and every other method on a known path 405 with {@code Allow}, as JSON {@code {"error": ...}}.
 *
 * <p>Blocking handler: routes do short Redis calls and the proxy streams on the calling thread;
 * synchronous invocations wait without a thread (see {@link InvokeRoute}).
 */
final class Routes extends Handler.Abstract {
  // a trigger's name in app.yaml (decision 0034); the agent answers 404 for one the app lacks
  private static final java.util.regex.Pattern TRIGGER =
      java.util.regex.Pattern.compile(dev.sand.contracts.contractsConstants.NAME_TRIGGER);

  private final Supplier<Map<String, Object>> identity;
  private final HostLinks hosts;
  private final InvokeRoute invoke;
  private final Authenticator auth;
  private final FrontendPeers peers;
  private final String secret;
  private final ExecutionControl control;
  private final FrontendMetrics metrics;
  private final MetricsRoute metricsRoute;
  private final ClusterRoute cluster;
  private final TaskCallbacks tasks;
  private final ExecutionReads executions;
  private final PathMappings<Route> table = new PathMappings<>();

  Routes(
      Supplier<Map<String, Object>> identity,
      HostLinks hosts,
      InvokeRoute invoke,
      Authenticator auth,
      FrontendPeers peers,
      String secret,
      ExecutionControl control,
      FrontendMetrics metrics) {
    this.identity = identity;
    this.hosts = hosts;
    this.invoke = invoke;
    this.auth = auth;
    this.peers = peers;
    this.secret = secret;
    this.control = control;
    this.metrics = metrics;
    this.metricsRoute = new MetricsRoute(metrics, auth, secret);
    this.cluster = new ClusterRoute(hosts);
    this.tasks = new TaskCallbacks(hosts, java.time.Clock.systemUTC(), control::find);
    this.executions = new ExecutionReads(hosts);
    routes();
  }

  /** What a route does: the path's variables, and its caller (null on a route open to anyone). */
  @FunctionalInterface
  private interface Action {
    void run(
        Map<String, String> path, Caller caller, Request request, Response response, Callback cb);
  }

  /** A path's methods (in their order for {@code Allow}) and whether it needs no token. */
  private record Route(boolean open, Map<String, Action> methods) {}

  /** The route table: one row per path template and its methods. */
  private void routes() {
    Action forward = (v, c, req, res, cb) -> hosts.agent().forward(req, res, cb, c);
    Action forApp = (v, c, req, res, cb) -> forwardForApp(v.get("app"), req, res, cb, c);
    Action access = (v, c, req, res, cb) -> access(req, res, cb, c);
    open("/", "GET HEAD", (v, c, req, res, cb) -> toTheGui(res, cb));
    open("/health", "GET HEAD", (v, c, req, res, cb) -> health(res, cb));
    open("/metrics", "GET", (v, c, req, res, cb) -> metricsRoute.handle(req, res, cb));
    open(InternalApi.AUTH_FLUSH, "POST", (v, c, req, res, cb) -> flush(req, res, cb));
    route("/v1/apps", "GET POST", forward);
    route("/v1/apps/{app}", "GET DELETE", forApp);
    route("/v1/apps/{app}/logs", "GET", forApp);
    route("/v1/apps/{app}/workflows/{workflow}", "GET", forApp);
    route("/v1/apps/{app}/triggers", "GET", forApp);
    for (String change : List.of("pause", "resume")) {
      route(
          "/v1/apps/{app}/triggers/{trigger}/" + change,
          "POST",
          (v, c, req, res, cb) -> trigger(v.get("app"), v.get("trigger"), c, req, res, cb));
    }
    route(
        "/v1/apps/{app}/invoke",
        "POST",
        (v, c, req, res, cb) ->
            invoke.handle(
                v.get("app"), c, req, res, metrics.invocation(v.get("app"), mode(req), res, cb)));
    route("/v1/cluster", "GET", (v, c, req, res, cb) -> cluster.handle(c, res, cb));
    route("/v1/executions", "GET", forward);
    route(
        "/v1/executions/{id}",
        "GET",
        (v, c, req, res, cb) -> executions.execution(v.get("id"), c, req, res, cb));
    route(
        "/v1/executions/{id}/history",
        "GET",
        (v, c, req, res, cb) -> executions.history(v.get("id"), c, req, res, cb));
    route(
        "/v1/executions/{id}/stop",
        "POST",
        (v, c, req, res, cb) ->
            control.stop(v.get("id"), c, req, res, metrics.control("stop", res, cb)));
    route(
        "/v1/executions/{id}/redrive",
        "POST",
        (v, c, req, res, cb) ->
            control.redrive(v.get("id"), c, res, metrics.control("redrive", res, cb)));
    for (String answer : List.of("success", "failure", "heartbeat")) {
      route(
          "/v1/tasks/{token}/" + answer,
          "POST",
          (v, c, req, res, cb) -> tasks.handle(v.get("token"), answer, c, req, res, cb));
    }
    route("/v1/whoami", "GET", access);
    route("/v1/users", "GET POST", access);
    route("/v1/users/{name}", "DELETE", access);
    route("/v1/tokens", "GET POST", access);
    route("/v1/tokens/{id}", "DELETE", access);
  }

  private void open(String template, String methods, Action action) {
    add(template, true, methods, action);
  }

  private void route(String template, String methods, Action action) {
    add(template, false, methods, action);
  }

  private void add(String template, boolean open, String methods, Action action) {
    Map<String, Action> byMethod = new LinkedHashMap<>();
    for (String method : methods.split(" ")) {
      byMethod.put(method, action);
    }
    table.put(new UriTemplatePathSpec(template), new Route(open, byMethod));
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    // a trailing or doubled slash is tolerated: /v1/apps/ is /v1/apps
    String path = "/" + String.join("/", segments(Request.getPathInContext(request)));
    MatchedResource<Route> matched = table.getMatched(path);
    Route route = matched == null ? null : matched.getResource();
    Caller caller = null;
    if (route == null || !route.open()) {
      // every path but the open ones needs a token first, an unknown one too: without a token
      // nobody learns which paths exist
      caller = authenticate(request, response, callback);
      if (caller == null) {
        return true;
      }
    }
    if (route == null) {
      JsonHttp.error(response, callback, HttpStatus.NOT_FOUND_404, "no such path: " + path);
      return true;
    }
    Action action = route.methods().get(request.getMethod());
    if (action == null) {
      notAllowed(request.getMethod(), response, callback, path, route.methods().keySet());
      return true;
    }
    Map<String, String> variables =
        ((UriTemplatePathSpec) matched.getPathSpec()).getPathParams(path);
    action.run(variables == null ? Map.of() : variables, caller, request, response, callback);
    return true;
  }

  /** The caller of a bearer token; null once a 401 or 503 answered that there is none. */
  private Caller authenticate(Request request, Response response, Callback callback) {
    try {
      return auth.authenticate(request.getHeaders().get(HttpHeader.AUTHORIZATION));
    } catch (Authenticator.Refused e) {
      metrics.authFailed(FrontendMetrics.BAD_TOKEN);
      response.getHeaders().put(HttpHeader.WWW_AUTHENTICATE, "Bearer realm=\"sand\"");
      JsonHttp.error(response, callback, HttpStatus.UNAUTHORIZED_401, e.getMessage());
    } catch (Authenticator.Unavailable e) {
      JsonHttp.error(response, callback, HttpStatus.SERVICE_UNAVAILABLE_503, e.getMessage());
    }
    return null;
  }

  /** {@code GET /}: to the web GUI. */
  private static void toTheGui(Response response, Callback callback) {
    // relative: the browser resolves it against whatever address reached nginx
    response.getHeaders().put(HttpHeader.LOCATION, StaticUi.CONTEXT + "/");
    JsonHttp.send(
        response, callback, HttpStatus.FOUND_302, Map.of("location", StaticUi.CONTEXT + "/"));
  }

  /** {@code POST /internal/auth/flush}: another frontend says users or tokens changed. */
  private void flush(Request request, Response response, Callback callback) {
    if (!Tokens.sameSecret(secret, request.getHeaders().get(contractsConstants.HEADER_INTERNAL))) {
      JsonHttp.error(
          response, callback, HttpStatus.UNAUTHORIZED_401, "for SAND's own services only");
      return;
    }
    auth.flush();
    JsonHttp.send(response, callback, HttpStatus.OK_200, Map.of("flushed", true));
  }

  /**
   * Users and tokens: kept by the host agents. A change is answered only once every frontend (this
   * one first) dropped the tokens it had cached, so a revoked token is refused at once everywhere.
   */
  private void access(Request request, Response response, Callback callback, Caller caller) {
    AgentProxy.Answer answer;
    try {
      answer = hosts.agent().exchange(request, caller);
    } catch (IOException e) {
      JsonHttp.error(
          response,
          callback,
          HttpStatus.SERVICE_UNAVAILABLE_503,
          "users and tokens cannot be reached now: " + e.getMessage());
      return;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      callback.failed(e);
      return;
    }
    boolean changed = !"GET".equals(request.getMethod()) && answer.status() / 100 == 2;
    if (changed) {
      auth.flush();
      peers.flushAll(); // logs the frontends that did not confirm
    }
    response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-store");
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, answer.contentType());
    response.setStatus(answer.status());
    response.write(true, java.nio.ByteBuffer.wrap(answer.body()), callback);
  }

  /** The raw {@code mode} query parameter of an invocation (a metrics label once checked). */
  private static String mode(Request request) {
    String query = request.getHttpURI().getQuery();
    return query == null || !query.contains("mode=")
        ? null
        : Request.extractQueryParameters(request).getValue("mode");
  }

  /** The non-empty segments of {@code path}; a trailing slash is tolerated. */
  private static List<String> segments(String path) {
    if (path == null) {
      return List.of();
    }
    return java.util.Arrays.stream(path.split("/")).filter(s -> !s.isEmpty()).toList();
  }

  /** Answers 405 with {@code Allow}: {@code method} is not one of {@code allow}. */
  private static void notAllowed(
      String method,
      Response response,
      Callback callback,
      String path,
      java.util.Collection<String> allow) {
    response.getHeaders().put(HttpHeader.ALLOW, String.join(", ", allow));
    JsonHttp.error(
        response,
        callback,
        HttpStatus.METHOD_NOT_ALLOWED_405,
        method + " not allowed on " + path + " (allowed: " + String.join(", ", allow) + ")");
  }

  /** 200 while at least one host's Redis answers (invocations can go there), else 503. */
  private void health(Response response, Callback callback) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("status", "ok");
    body.putAll(identity.get());
    List<Map<String, Object>> linked = new java.util.ArrayList<>();
    boolean anyUp = false;
    for (HostLinks.Link link : hosts.all()) {
      Map<String, Object> host = new LinkedHashMap<>();
      host.put("id", link.host.id());
      host.put("redis", link.host.redisSocket().toString());
      RedisLocalBus bus = link.bus;
      try {
        if (bus == null) {
          throw new LocalBusException("not connected yet", null);
        }
        bus.ping();
        host.put("status", "ok");
        anyUp = true;
      } catch (LocalBusException e) {
        host.put("status", "unavailable");
        host.put("error", e.getMessage());
      }
      linked.add(host);
    }
    if (linked.size() == 1) {
      body.put("redis", linked.get(0).get("redis"));
    }
    body.put("hosts", linked);
    if (!anyUp) {
      body.put("status", "unavailable");
      body.put("error", linked.size() == 1 ? linked.get(0).get("error") : "no host answers");
      JsonHttp.send(response, callback, HttpStatus.SERVICE_UNAVAILABLE_503, body);
      return;
    }
    JsonHttp.send(response, callback, HttpStatus.OK_200, body);
  }

  private void forwardForApp(
      String app, Request request, Response response, Callback callback, Caller caller) {
    try {
      Names.requireApp(app);
    } catch (IllegalArgumentException e) {
      JsonHttp.error(
          response,
          callback,
          HttpStatus.NOT_FOUND_404,
          "no application '" + app + "': " + e.getMessage());
      return;
    }
    hosts.agent().forward(request, response, callback, caller);
  }

  /**
   * {@code POST /v1/apps/{app}/triggers/{trigger}/pause|resume}: forwarded to the agent; a name
   * that cannot be a trigger's is 400.
   */
  private void trigger(
      String app,
      String trigger,
      Caller caller,
      Request request,
      Response response,
      Callback callback) {
    if (!TRIGGER.matcher(trigger).matches()) {
      JsonHttp.error(
          response,
          callback,
          HttpStatus.BAD_REQUEST_400,
          "trigger name must match " + TRIGGER.pattern() + ", got '" + trigger + "'");
    } else {
      forwardForApp(app, request, response, callback, caller);
    }
  }
}
