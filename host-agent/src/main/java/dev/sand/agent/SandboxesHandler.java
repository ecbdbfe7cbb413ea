package dev.sand.agent;

import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.sand.agent.apps.Deployer;
import dev.sand.service.InternalApi;
import dev.sand.service.JsonHttp;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * {@code GET /internal/sandboxes}: every sandbox of this host with its grain workers' health and
 * each app's owner, for the frontends' {@code GET /v1/cluster}, which keep what the caller may see
 * ({@link dev.sand.contracts.Caller#mayUse}). Like every agent route but {@code /health}, for
 * callers holding the agents' secret only. Blocking (asks the runtimes and Redis).
 */
final class SandboxesHandler extends Handler.Abstract {
  static final String PATH = InternalApi.SANDBOXES;

  private final String hostId;
  private final Supplier<Deployer> deployer;

  SandboxesHandler(String hostId, Supplier<Deployer> deployer) {
    this.hostId = hostId;
    this.deployer = deployer;
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    if (!"GET".equals(request.getMethod())) {
      response.getHeaders().put(HttpHeader.ALLOW, "GET");
      JsonHttp.error(
          response,
          callback,
          HttpStatus.METHOD_NOT_ALLOWED_405,
          request.getMethod() + " not allowed on " + PATH);
      return true;
    }
    Deployer apps = deployer.get();
    if (apps == null) {
      JsonHttp.error(
          response,
          callback,
          HttpStatus.SERVICE_UNAVAILABLE_503,
          "the host agent is still connecting to its dependencies");
      return true;
    }
    ArrayNode sandboxes = apps.sandboxes();
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("host_id", hostId);
    body.put("sandboxes", sandboxes);
    JsonHttp.send(response, callback, HttpStatus.OK_200, body);
    return true;
  }
}
