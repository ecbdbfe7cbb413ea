package dev.sand.agent;

import dev.sand.contracts.contractsConstants;
import dev.sand.service.JsonHttp;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.http.pathmap.PathSpec;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.handler.PathMappingsHandler;
import org.eclipse.jetty.util.Callback;

/**
 * The host agent's HTTP routes in one table, on Jetty's own path mapping: {@code /health} for
 * anyone; every other route only for SAND's own services ({@link InternalAuth}); a path no route
 * names is 404 (as JSON, like every answer). Each handler still answers 405 for a method it does
 * not take, with {@code Allow}.
 *
 * <p>Path specs are Jetty's: an exact path, {@code /prefix/*} (which also matches {@code /prefix}),
 * or a {@code ^regex$}; a regex is matched before a prefix, so the triggers of an app are not taken
 * by the apps' prefix.
 */
final class AgentRoutes extends Handler.Wrapper {
  static final String HEALTH = "/health";

  private final Handler health;
  private final InternalAuth auth;
  private final PathMappingsHandler table = new PathMappingsHandler();

  AgentRoutes(Handler health, InternalAuth auth) {
    this.health = health;
    this.auth = auth;
    setHandler(table);
  }

  /** Routes each of {@code specs} to {@code handler}; returns this table. */
  AgentRoutes route(Handler handler, String... specs) {
    for (String spec : specs) {
      table.addMapping(PathSpec.from(spec), handler);
    }
    return this;
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) throws Exception {
    String path = Request.getPathInContext(request);
    if (HEALTH.equals(path)) {
      return health.handle(request, response, callback);
    }
    try {
      if (auth.authenticate(request).isEmpty()) {
        JsonHttp.error(
            response,
            callback,
            HttpStatus.UNAUTHORIZED_401,
            "the host agent answers SAND's own services only (missing or wrong "
                + contractsConstants.HEADER_INTERNAL
                + ")");
        return true;
      }
    } catch (IllegalArgumentException e) {
      JsonHttp.error(response, callback, HttpStatus.BAD_REQUEST_400, e.getMessage());
      return true;
    }
    if (!super.handle(request, response, callback)) {
      JsonHttp.error(response, callback, HttpStatus.NOT_FOUND_404, "no such path: " + path);
    }
    return true;
  }
}
