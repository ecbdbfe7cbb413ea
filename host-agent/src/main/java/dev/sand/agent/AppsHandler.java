package dev.sand.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.agent.apps.DeployException;
import dev.sand.agent.apps.DeployOptions;
import dev.sand.agent.apps.Deployer;
import dev.sand.config.ConfigException;
import dev.sand.config.SandboxConfig;
import dev.sand.contracts.Caller;
import dev.sand.service.JsonHttp;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.Fields;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The management API of one host ({@code /v1/apps}), which the frontends proxy: deploy (NDJSON
 * progress), validate only ({@code POST /v1/apps?dry_run=true}), undeploy, list, describe, a
 * workflow's definition, logs; each for the apps the caller may use ({@link Ownership}). Blocking
 * handler: a deploy holds its thread for as long as it takes. Answers 503 until the agent's
 * dependencies are connected.
 */
final class AppsHandler extends Handler.Abstract {
  private static final Logger LOG = LoggerFactory.getLogger(AppsHandler.class);
  static final int MAX_ARCHIVE_BYTES = 64 * 1024 * 1024;
  private static final String PREFIX = "/v1/apps";

  private final Supplier<Deployer> deployer;
  private final Ownership ownership;

  AppsHandler(Supplier<Deployer> deployer, Ownership ownership) {
    this.deployer = deployer;
    this.ownership = ownership;
  }

  /** Its routes (Jetty path specs, {@link AgentRoutes}). */
  static final String[] PATHS = {PREFIX, PREFIX + "/*"};

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    String path = Request.getPathInContext(request);
    String method = request.getMethod();
    List<String> parts = new ArrayList<>(List.of(path.substring(PREFIX.length()).split("/")));
    parts.removeIf(String::isEmpty);
    Deployer apps = deployer.get();
    Caller caller = InternalAuth.callerOf(request);
    try {
      if (apps == null) {
        throw new DeployException(
            DeployException.Reason.UNAVAILABLE,
            "the host agent is still connecting to its dependencies");
      }
      if (parts.isEmpty()) {
        if ("POST".equals(method)) {
          deploy(apps, caller, request, response, callback);
        } else if ("GET".equals(method)) {
          List<ObjectNode> visible =
              apps.list().stream().filter(m -> caller.mayUse(Ownership.ownerIn(m))).toList();
          JsonHttp.send(response, callback, 200, Map.of("apps", visible));
        } else {
          notAllowed(response, callback, "GET, POST", method, path);
        }
      } else if (parts.size() == 1) {
        String app = parts.get(0);
        requireVisible(apps, app, caller);
        if ("GET".equals(method)) {
          ObjectNode found =
              apps.describe(app)
                  .orElseThrow(
                      () ->
                          new DeployException(
                              DeployException.Reason.NOT_FOUND,
                              "no application '" + app + "' is deployed"));
          JsonHttp.send(response, callback, 200, found);
        } else if ("DELETE".equals(method)) {
          apps.undeploy(app);
          JsonHttp.send(response, callback, 200, Map.of("undeployed", app));
        } else {
          notAllowed(response, callback, "GET, DELETE", method, path);
        }
      } else if (parts.size() == 3 && "workflows".equals(parts.get(1))) {
        if (!"GET".equals(method)) {
          notAllowed(response, callback, "GET", method, path);
          return true;
        }
        String app = parts.get(0);
        requireVisible(apps, app, caller);
        ObjectNode found =
            apps.workflow(app, parts.get(2))
                .orElseThrow(
                    () ->
                        new DeployException(
                            DeployException.Reason.NOT_FOUND,
                            apps.describe(app).isEmpty()
                                ? "no application '" + app + "' is deployed"
                                : "application '"
                                    + app
                                    + "' has no workflow '"
                                    + parts.get(2)
                                    + "'"));
        JsonHttp.send(response, callback, 200, found);
      } else if (parts.size() == 2 && "logs".equals(parts.get(1))) {
        if (!"GET".equals(method)) {
          notAllowed(response, callback, "GET", method, path);
          return true;
        }
        requireVisible(apps, parts.get(0), caller);
        int tail = tail(Request.extractQueryParameters(request));
        JsonHttp.send(
            response,
            callback,
            200,
            Map.of("app", parts.get(0), "logs", apps.logs(parts.get(0), tail)));
      } else {
        JsonHttp.error(response, callback, 404, "no such path: " + path);
      }
    } catch (DeployException e) {
      if (response.isCommitted()) {
        callback.failed(e);
      } else {
        problems(response, callback, e);
      }
    }
    return true;
  }

  /**
   * The {@code placement} parameter: a JSON object that replaces the manifest's placement. Only its
   * shape is checked here; its rules are the validator's, applied with the app.
   */
  private static Optional<String> placement(String raw) {
    if (raw == null) {
      return Optional.empty();
    }
    try {
      JsonNode node = JsonHttp.MAPPER.readTree(raw);
      if (node != null && node.isObject()) {
        return Optional.of(node.toString());
      }
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      // answered below
    }
    throw new DeployException(
        DeployException.Reason.INVALID,
        "placement must be a JSON object such as {\"hosts\": [\"host-1\"]}, got '" + raw + "'");
  }

  /**
   * Refuses {@code app} to a caller who may not use it exactly as a missing app is refused, so that
   * another user's app names do not leak.
   */
  private void requireVisible(Deployer apps, String app, Caller caller) {
    if (caller.admin()) {
      return;
    }
    Optional<String> owner =
        apps.describe(app).map(Ownership::ownerIn).orElseGet(() -> ownership.owner(app));
    if (!caller.mayUse(owner)) {
      throw new DeployException(
          DeployException.Reason.NOT_FOUND, "no application '" + app + "' is deployed");
    }
  }

  private void deploy(
      Deployer apps, Caller caller, Request request, Response response, Callback callback) {
    Optional<SandboxConfig.Backend> backend;
    Fields query = Request.extractQueryParameters(request);
    boolean dryRun = dryRun(query.getValue("dry_run"));
    String wanted = query.getValue("backend");
    try {
      backend =
          wanted == null ? Optional.empty() : Optional.of(SandboxConfig.Backend.parse(wanted));
    } catch (ConfigException e) {
      throw new DeployException(
          DeployException.Reason.INVALID,
          "backend must be docker or process, got '" + wanted + "'");
    }
    String backups = query.getValue("backups");
    if (backups != null && !backups.equals("on") && !backups.equals("off")) {
      throw new DeployException(
          DeployException.Reason.INVALID, "backups must be on or off, got '" + backups + "'");
    }
    String remote = query.getValue("remote_grains");
    Set<String> remoteGrains = new LinkedHashSet<>();
    for (String grain : remote == null ? new String[0] : remote.split(",")) {
      if (!grain.isBlank()) {
        remoteGrains.add(grain.strip());
      }
    }
    DeployOptions options =
        new DeployOptions(
            backend, !"off".equals(backups), remoteGrains, placement(query.getValue("placement")));
    byte[] archive = readBody(request);
    if (dryRun) {
      dryRun(apps, caller, archive, options, response, callback);
      return;
    }
    // Progress lines are held back until the app is valid, so that an invalid app gets a plain
    // 400 with its problems instead of a 200 stream that ends in failure.
    List<Map<String, Object>> held = new ArrayList<>();
    OutputStream[] stream = new OutputStream[1];
    try {
      ObjectNode app =
          apps.deploy(
              archive,
              options,
              name -> ownership.claim(name, caller),
              progress -> {
                Map<String, Object> line = new LinkedHashMap<>();
                line.put("phase", progress.phase());
                line.put("elapsed_s", progress.elapsedS());
                if (stream[0] == null
                    && !progress.phase().startsWith("unpacking")
                    && !progress.phase().equals("validating")) {
                  stream[0] = open(response);
                  held.forEach(h -> write(stream[0], h));
                }
                if (stream[0] == null) {
                  held.add(line);
                } else {
                  write(stream[0], line);
                }
              });
      if (stream[0] == null) {
        stream[0] = open(response);
        held.forEach(h -> write(stream[0], h));
      }
      write(stream[0], Map.of("status", "deployed", "app", app));
      close(stream[0], callback);
    } catch (DeployException e) {
      if (stream[0] == null) {
        throw e;
      }
      LOG.atWarn().addKeyValue("error", e.getMessage()).log("deploy failed");
      Map<String, Object> last = new LinkedHashMap<>();
      last.put("status", "failed");
      last.put("http_status", Refusals.status(e.reason()));
      last.put("problems", e.problems());
      write(stream[0], last);
      close(stream[0], callback);
    } catch (RuntimeException e) {
      LOG.atError().setCause(e).log("deploy crashed");
      DeployException failure =
          new DeployException(DeployException.Reason.INTERNAL, "deploy failed: " + e);
      if (stream[0] == null) {
        throw failure;
      }
      write(stream[0], Map.of("status", "failed", "problems", failure.problems()));
      close(stream[0], callback);
    }
  }

  /** The {@code dry_run} parameter: {@code true} or {@code false} (the default). */
  private static boolean dryRun(String raw) {
    if (raw == null || raw.equals("false")) {
      return false;
    }
    if (raw.equals("true")) {
      return true;
    }
    throw new DeployException(
        DeployException.Reason.INVALID, "dry_run must be true or false, got '" + raw + "'");
  }

  /**
   * {@code POST /v1/apps?dry_run=true}: the deploy's own checks (parameters, archive, the Python
   * validation, remote grains, the name's owner), nothing started, recorded or claimed. 200 {@code
   * {"status":"valid","app":{...}}}, else the refusal the deploy would answer.
   */
  private void dryRun(
      Deployer apps,
      Caller caller,
      byte[] archive,
      DeployOptions options,
      Response response,
      Callback callback) {
    ObjectNode app = apps.validate(archive, options);
    String name = app.path("name").asText();
    // a deploy would be refused a name another user holds: so is its dry run (nothing claimed)
    if (!caller.admin() && caller.user() != null) {
      Optional<String> owner = ownership.owner(name);
      if (owner.isPresent() && !owner.get().equals(caller.user())) {
        throw new DeployException(
            DeployException.Reason.CONFLICT,
            "the application name '" + name + "' is taken; choose another");
      }
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("status", "valid");
    body.put("app", app);
    JsonHttp.send(response, callback, 200, body);
  }

  private static byte[] readBody(Request request) {
    long declared = request.getLength();
    if (declared > MAX_ARCHIVE_BYTES) {
      throw new DeployException(
          DeployException.Reason.TOO_LARGE,
          "the upload is " + declared + " bytes; the limit is " + MAX_ARCHIVE_BYTES);
    }
    try (InputStream in = Content.Source.asInputStream(request)) {
      byte[] body = in.readNBytes(MAX_ARCHIVE_BYTES + 1);
      if (body.length > MAX_ARCHIVE_BYTES) {
        throw new DeployException(
            DeployException.Reason.TOO_LARGE,
            "the upload is over the limit of " + MAX_ARCHIVE_BYTES + " bytes");
      }
      if (body.length == 0) {
        throw new DeployException(
            DeployException.Reason.INVALID,
            "the request body must be a tar or zip of the app directory");
      }
      return body;
    } catch (IOException e) {
      throw new DeployException(
          DeployException.Reason.INVALID, "cannot read the upload: " + e.getMessage());
    }
  }

  private static OutputStream open(Response response) {
    response.setStatus(200);
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/x-ndjson");
    response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-store");
    return Content.Sink.asOutputStream(response);
  }

  private static void write(OutputStream out, Object line) {
    try {
      out.write(JsonHttp.MAPPER.writeValueAsBytes(line));
      out.write('\n');
      out.flush();
    } catch (IOException e) {
      // the client went away; the deploy itself goes on and its result stays visible in GET
      LOG.atInfo().addKeyValue("error", e.toString()).log("deploy progress not delivered");
    }
  }

  private static void close(OutputStream out, Callback callback) {
    try {
      out.close();
      callback.succeeded();
    } catch (IOException e) {
      callback.failed(e);
    }
  }

  private static void problems(Response response, Callback callback, DeployException e) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put(
        "error", e.problems().size() == 1 ? e.problems().get(0) : "the application is invalid");
    body.put("problems", e.problems());
    JsonHttp.send(response, callback, Refusals.status(e.reason()), body);
  }

  private static void notAllowed(
      Response response, Callback callback, String allow, String method, String path) {
    response.getHeaders().put(HttpHeader.ALLOW, allow);
    JsonHttp.error(
        response, callback, HttpStatus.METHOD_NOT_ALLOWED_405, method + " not allowed on " + path);
  }

  private static int tail(Fields query) {
    String raw = query.getValue("tail");
    if (raw == null) {
      return 200;
    }
    try {
      int tail = Integer.parseInt(raw);
      if (tail < 1 || tail > 100_000) {
        throw new NumberFormatException();
      }
      return tail;
    } catch (NumberFormatException e) {
      throw new DeployException(
          DeployException.Reason.INVALID, "tail must be an integer 1..100000, got '" + raw + "'");
    }
  }
}
