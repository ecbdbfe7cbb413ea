package dev.sand.agent;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.agent.apps.Deployer;
import dev.sand.agent.triggers.Triggers;
import dev.sand.contracts.Caller;
import dev.sand.contracts.contractsConstants;
import dev.sand.service.JsonHttp;
import dev.sand.store.StoreException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * The triggers of an app (decision 0034), for its owner or an admin; another caller is answered as
 * for a missing app:
 *
 * <ul>
 *   <li>{@code GET /v1/apps/{app}/triggers}: 200 {@code {"triggers": [...]}}, each with its state
 *       (paused, next and last firing, a topic's lag)
 *   <li>{@code POST /v1/apps/{app}/triggers/{name}/pause} and {@code .../resume}: 200 the trigger
 * </ul>
 *
 * <p>404 naming an unknown app or trigger, 503 while Cassandra cannot answer. Blocking handler.
 */
final class TriggersHandler extends Handler.Abstract {
  private static final Pattern PATH =
      Pattern.compile("/v1/apps/([^/]+)/triggers(?:/([^/]+)/([^/]+))?");
  private static final Pattern NAME = Pattern.compile(contractsConstants.NAME_TRIGGER);

  private final Supplier<Deployer> deployer;
  private final Supplier<Triggers> triggers;

  TriggersHandler(Supplier<Deployer> deployer, Supplier<Triggers> triggers) {
    this.deployer = deployer;
    this.triggers = triggers;
  }

  /** Its routes (Jetty path specs, {@link AgentRoutes}). */
  static final String[] PATHS = {"^" + PATH.pattern() + "$"};

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    var path = PATH.matcher(Request.getPathInContext(request));
    if (!path.matches()) {
      return false;
    }
    String app = path.group(1);
    String name = path.group(2);
    String action = path.group(3);
    String method = request.getMethod();
    String allowed = name == null ? "GET" : "POST";
    if (!allowed.equals(method)) {
      response.getHeaders().put("Allow", allowed);
      JsonHttp.error(response, callback, 405, method + " not allowed on " + path.group());
      return true;
    }
    if (name != null && !NAME.matcher(name).matches()) {
      JsonHttp.error(
          response,
          callback,
          400,
          "trigger name must match " + NAME.pattern() + ", got '" + name + "'");
      return true;
    }
    if (action != null && !"pause".equals(action) && !"resume".equals(action)) {
      JsonHttp.error(response, callback, 404, "no such path: " + path.group());
      return true;
    }
    Deployer apps = deployer.get();
    Triggers all = triggers.get();
    if (apps == null || all == null) {
      JsonHttp.error(response, callback, 503, "the host agent is still starting");
      return true;
    }
    Caller caller = InternalAuth.callerOf(request);
    Optional<ObjectNode> metadata =
        apps.describe(app).filter(m -> caller.admin() || caller.mayUse(Ownership.ownerIn(m)));
    if (metadata.isEmpty()) {
      JsonHttp.error(response, callback, 404, "no application '" + app + "' is deployed");
      return true;
    }
    try {
      if (name == null) {
        List<ObjectNode> list = all.describe(metadata.get());
        JsonHttp.send(response, callback, 200, Map.of("triggers", list));
      } else {
        JsonHttp.send(
            response, callback, 200, all.setPaused(metadata.get(), name, "pause".equals(action)));
      }
    } catch (Triggers.UnknownTrigger e) {
      JsonHttp.error(response, callback, 404, e.getMessage());
    } catch (StoreException e) {
      JsonHttp.error(response, callback, 503, "triggers cannot be read now: " + e.getMessage());
    }
    return true;
  }
}
