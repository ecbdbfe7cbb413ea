package dev.sand.frontend;

import dev.sand.bus.redis.LocalBusException;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.contracts.Caller;
import dev.sand.contracts.Keys;
import dev.sand.contracts.Names;
import dev.sand.contracts.ResultDocument;
import dev.sand.contracts.Tokens;
import dev.sand.contracts.contractsConstants;
import dev.sand.service.JsonHttp;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
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
 *   <li>{@code GET /v1/executions/{id}}: the status document in Redis, else the execution's record
 *       in Cassandra (through the host agent). Redis first: it is what a client polls, and it is
 *       there at once; {@code input}, {@code name} and {@code redrive_count} appear in the answer
 *       once Redis forgot the document and the record answers (decision 0018)
 *   <li>{@code GET /v1/executions}, {@code GET /v1/executions/{id}/history}: forwarded to a host
 *       agent, which reads the execution records of Cassandra
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
 * <p>Every other path answers 404 and every other method on a known path 405 with {@code Allow}, as
 * JSON {@code {"error": ...}}.
 *
 * <p>Blocking handler: routes do short Redis calls and the proxy streams on the calling thread;
 * synchronous invocations wait without a thread (see {@link InvokeRoute}).
 */
final class Routes extends Handler.Abstract {
  private static final List<String> FLUSH = List.of("internal", "auth", "flush");
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
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    String path = Request.getPathInContext(request);
    String method = request.getMethod();
    List<String> parts = segments(path);
    if ("/".equals(path)) {
      if (allowed(method, response, callback, path, "GET", "HEAD")) {
        // relative: the browser resolves it against whatever address reached nginx
        response.getHeaders().put(HttpHeader.LOCATION, StaticUi.CONTEXT + "/");
        JsonHttp.send(
            response, callback, HttpStatus.FOUND_302, Map.of("location", StaticUi.CONTEXT + "/"));
      }
      return true;
    }
    if (parts.equals(List.of("health"))) {
      if (allowed(method, response, callback, path, "GET", "HEAD")) {
        health(response, callback);
      }
      return true;
    }
    if (parts.equals(List.of("metrics"))) {
      if (allowed(method, response, callback, path, "GET")) {
        metricsRoute.handle(request, response, callback);
      }
      return true;
    }
    if (parts.equals(FLUSH)) {
      if (allowed(method, response, callback, path, "POST")) {
        flush(request, response, callback);
      }
      return true;
    }
    Caller caller;
    try {
      caller = auth.authenticate(request.getHeaders().get(HttpHeader.AUTHORIZATION));
    } catch (Authenticator.Refused e) {
      metrics.authFailed(FrontendMetrics.BAD_TOKEN);
      response.getHeaders().put(HttpHeader.WWW_AUTHENTICATE, "Bearer realm=\"sand\"");
      JsonHttp.error(response, callback, HttpStatus.UNAUTHORIZED_401, e.getMessage());
      return true;
    } catch (Authenticator.Unavailable e) {
      JsonHttp.error(response, callback, HttpStatus.SERVICE_UNAVAILABLE_503, e.getMessage());
      return true;
    }
    if (parts.equals(List.of("v1", "apps"))) {
      if (allowed(method, response, callback, path, "GET", "POST")) {
        hosts.agent().forward(request, response, callback, caller);
      }
    } else if (parts.size() == 3 && parts.subList(0, 2).equals(List.of("v1", "apps"))) {
      if (allowed(method, response, callback, path, "GET", "DELETE")) {
        forwardForApp(parts.get(2), request, response, callback, caller);
      }
    } else if (parts.size() == 4
        && parts.subList(0, 2).equals(List.of("v1", "apps"))
        && "logs".equals(parts.get(3))) {
      if (allowed(method, response, callback, path, "GET")) {
        forwardForApp(parts.get(2), request, response, callback, caller);
      }
    } else if (parts.size() == 5
        && parts.subList(0, 2).equals(List.of("v1", "apps"))
        && "workflows".equals(parts.get(3))) {
      if (allowed(method, response, callback, path, "GET")) {
        forwardForApp(parts.get(2), request, response, callback, caller);
      }
    } else if (parts.size() >= 4
        && parts.subList(0, 2).equals(List.of("v1", "apps"))
        && "triggers".equals(parts.get(3))) {
      triggers(parts, caller, request, response, callback);
    } else if (parts.equals(List.of("v1", "cluster"))) {
      if (allowed(method, response, callback, path, "GET")) {
        cluster.handle(caller, response, callback);
      }
    } else if (parts.size() == 4
        && parts.subList(0, 2).equals(List.of("v1", "apps"))
        && "invoke".equals(parts.get(3))) {
      if (allowed(method, response, callback, path, "POST")) {
        invoke.handle(
            parts.get(2),
            caller,
            request,
            response,
            metrics.invocation(parts.get(2), mode(request), response, callback));
      }
    } else if (parts.size() == 3 && parts.subList(0, 2).equals(List.of("v1", "executions"))) {
      if (allowed(method, response, callback, path, "GET")) {
        execution(parts.get(2), caller, request, response, callback);
      }
    } else if (parts.equals(List.of("v1", "executions"))) {
      if (allowed(method, response, callback, path, "GET")) {
        hosts.agent().forward(request, response, callback, caller);
      }
    } else if (parts.size() == 4
        && parts.subList(0, 2).equals(List.of("v1", "executions"))
        && "history".equals(parts.get(3))) {
      if (allowed(method, response, callback, path, "GET")) {
        history(parts.get(2), caller, request, response, callback);
      }
    } else if (parts.size() == 4
        && parts.subList(0, 2).equals(List.of("v1", "executions"))
        && "stop".equals(parts.get(3))) {
      if (allowed(method, response, callback, path, "POST")) {
        control.stop(
            parts.get(2), caller, request, response, metrics.control("stop", response, callback));
      }
    } else if (parts.size() == 4
        && parts.subList(0, 2).equals(List.of("v1", "executions"))
        && "redrive".equals(parts.get(3))) {
      if (allowed(method, response, callback, path, "POST")) {
        control.redrive(
            parts.get(2), caller, response, metrics.control("redrive", response, callback));
      }
    } else if (parts.size() == 4
        && parts.subList(0, 2).equals(List.of("v1", "tasks"))
        && List.of("success", "failure", "heartbeat").contains(parts.get(3))) {
      if (allowed(method, response, callback, path, "POST")) {
        tasks.handle(parts.get(2), parts.get(3), caller, request, response, callback);
      }
    } else if (parts.equals(List.of("v1", "whoami"))) {
      if (allowed(method, response, callback, path, "GET")) {
        access(request, response, callback, caller);
      }
    } else if (parts.size() == 2
        && List.of("users", "tokens").contains(parts.get(1))
        && "v1".equals(parts.get(0))) {
      if (allowed(method, response, callback, path, "GET", "POST")) {
        access(request, response, callback, caller);
      }
    } else if (parts.size() == 3
        && List.of("users", "tokens").contains(parts.get(1))
        && "v1".equals(parts.get(0))) {
      if (allowed(method, response, callback, path, "DELETE")) {
        access(request, response, callback, caller);
      }
    } else {
      JsonHttp.error(response, callback, HttpStatus.NOT_FOUND_404, "no such path: " + path);
    }
    return true;
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

  /** True when {@code method} is one of {@code allow}; otherwise answers 405 with Allow. */
  private static boolean allowed(
      String method, Response response, Callback callback, String path, String... allow) {
    for (String m : allow) {
      if (m.equals(method)) {
        return true;
      }
    }
    response.getHeaders().put(HttpHeader.ALLOW, String.join(", ", allow));
    JsonHttp.error(
        response,
        callback,
        HttpStatus.METHOD_NOT_ALLOWED_405,
        method + " not allowed on " + path + " (allowed: " + String.join(", ", allow) + ")");
    return false;
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
   * {@code GET /v1/apps/{app}/triggers} and {@code POST
   * /v1/apps/{app}/triggers/{name}/pause|resume} ({@code parts} starts with v1, apps, app,
   * triggers): forwarded to the agent once the path is one of these; a name that cannot be a
   * trigger's is 400.
   */
  private void triggers(
      List<String> parts, Caller caller, Request request, Response response, Callback callback) {
    String path = Request.getPathInContext(request);
    boolean list = parts.size() == 4;
    if (!list && (parts.size() != 6 || !List.of("pause", "resume").contains(parts.get(5)))) {
      JsonHttp.error(response, callback, HttpStatus.NOT_FOUND_404, "no such path: " + path);
    } else if (!allowed(request.getMethod(), response, callback, path, list ? "GET" : "POST")) {
      return;
    } else if (!list && !TRIGGER.matcher(parts.get(4)).matches()) {
      JsonHttp.error(
          response,
          callback,
          HttpStatus.BAD_REQUEST_400,
          "trigger name must match " + TRIGGER.pattern() + ", got '" + parts.get(4) + "'");
    } else {
      forwardForApp(parts.get(2), request, response, callback, caller);
    }
  }

  /** An execution's history: the agent reads it (and checks who may see it). */
  private void history(
      String id, Caller caller, Request request, Response response, Callback callback) {
    if (validExecutionId(id, response, callback)) {
      hosts.agent().forward(request, response, callback, caller);
    }
  }

  /** True when {@code id} can name an execution; otherwise answers 404 as for a missing one. */
  private static boolean validExecutionId(String id, Response response, Callback callback) {
    try {
      Names.requireExecutionId(id);
      return true;
    } catch (IllegalArgumentException e) {
      JsonHttp.error(
          response,
          callback,
          HttpStatus.NOT_FOUND_404,
          "no execution '" + id + "': " + e.getMessage());
      return false;
    }
  }

  private void execution(
      String id, Caller caller, Request request, Response response, Callback callback) {
    if (!validExecutionId(id, response, callback)) {
      return;
    }
    // The document is in the Redis of the host that ran the execution's last grain (a RUNNING
    // one on its entry host while it runs). A host that is away may hold the finished one: then
    // the record in Cassandra (through an agent) decides, and RUNNING is the fallback.
    Optional<byte[]> finished = Optional.empty();
    Optional<byte[]> running = Optional.empty();
    LocalBusException failure = null;
    boolean someHostAway = false;
    for (HostLinks.Link link : hosts.all()) {
      RedisLocalBus bus = link.bus;
      if (bus == null) {
        someHostAway = true;
        continue;
      }
      try {
        Optional<byte[]> found = bus.get(Keys.result(id));
        if (found.isPresent() && running(found.get())) {
          running = found;
        } else if (found.isPresent()) {
          finished = found;
        }
      } catch (LocalBusException e) {
        failure = e;
        someHostAway = true;
      }
    }
    Optional<byte[]> doc = finished;
    if (doc.isEmpty() && running.isPresent()) {
      Optional<byte[]> stillRunning = running;
      doc =
          someHostAway
              ? hosts.agent().get("/v1/executions/" + id, caller).or(() -> stillRunning)
              : running;
    }
    if (doc.isEmpty() && failure != null && hosts.size() == 1) {
      JsonHttp.error(response, callback, HttpStatus.SERVICE_UNAVAILABLE_503, failure.getMessage());
      return;
    }
    if (doc.isPresent() && !caller.admin()) {
      Optional<Boolean> mayUse = mayUseAppOf(doc.get(), caller);
      if (mayUse.isEmpty()) {
        // its app is no longer deployed: the agent knows the app's owner (and the record)
        doc = Optional.empty();
      } else if (!mayUse.get()) {
        JsonHttp.error(
            response, callback, HttpStatus.NOT_FOUND_404, "no execution '" + id + "' is recorded");
        return;
      }
    }
    if (doc.isEmpty()) {
      // Redis forgot it (after an hour) or never had it (its host died): the host agent reads
      // the execution records of the global data layer
      hosts.agent().forward(request, response, callback, caller);
      return;
    }
    response.getHeaders().put(InvokeRoute.EXECUTION_HEADER, id);
    JsonHttp.sendJson(response, callback, HttpStatus.OK_200, doc.get());
  }

  /**
   * Whether {@code caller} may see the execution whose document is {@code doc}, by the owner of its
   * app in the app's metadata; empty when no host has the app's metadata.
   */
  private Optional<Boolean> mayUseAppOf(byte[] doc, Caller caller) {
    String app;
    try {
      app = Names.requireApp(ResultDocument.parse(doc).app());
    } catch (IllegalArgumentException e) {
      // not a document of an app anybody owns: for admins only
      return Optional.of(false);
    }
    try {
      return hosts.first(link -> link.catalog.find(app)).map(m -> caller.mayUse(m.owner()));
    } catch (LocalBusException | IllegalStateException e) {
      return Optional.empty();
    }
  }

  private static boolean running(byte[] doc) {
    try {
      return !ResultDocument.parse(doc).finished();
    } catch (IllegalArgumentException e) {
      return false;
    }
  }
}
