package dev.sand.frontend;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.contracts.Caller;
import dev.sand.service.InternalApi;
import dev.sand.service.JsonHttp;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * {@code GET /v1/cluster}: every host of the cluster with its health, its sandboxes and their grain
 * workers, as each host agent reports them ({@code GET /internal/sandboxes}, asked of all hosts at
 * once). A user sees the sandboxes of their own apps only, an admin all ({@link Caller#mayUse} on
 * the app's owner); every host is listed either way. A host whose agent does not answer, or answers
 * an error, is {@code healthy: false} with the reason in {@code error}. Blocking, up to the agents'
 * lookup timeout (5 s).
 */
final class ClusterRoute {
  static final String AGENT_PATH = InternalApi.SANDBOXES;

  private final HostLinks hosts;

  ClusterRoute(HostLinks hosts) {
    this.hosts = hosts;
  }

  void handle(Caller caller, Response response, Callback callback) {
    List<HostLinks.Link> links = hosts.all();
    List<CompletableFuture<AgentProxy.Answer>> asked = new ArrayList<>();
    for (HostLinks.Link link : links) {
      asked.add(link.agent.fetchAsync(AGENT_PATH, caller));
    }
    List<Map<String, Object>> listed = new ArrayList<>();
    for (int i = 0; i < links.size(); i++) {
      listed.add(host(links.get(i), asked.get(i), caller));
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("hosts", listed);
    JsonHttp.send(response, callback, HttpStatus.OK_200, body);
  }

  private static Map<String, Object> host(
      HostLinks.Link link, CompletableFuture<AgentProxy.Answer> asked, Caller caller) {
    Map<String, Object> host = new LinkedHashMap<>();
    host.put("host_id", link.host.id());
    List<JsonNode> sandboxes = new ArrayList<>();
    String error = null;
    try {
      AgentProxy.Answer answer = asked.join();
      JsonNode doc = JsonHttp.MAPPER.readTree(answer.body());
      if (answer.status() != HttpStatus.OK_200) {
        error =
            "host agent at "
                + link.agent.address()
                + " answered "
                + answer.status()
                + (doc != null && doc.path("error").isTextual()
                    ? ": " + doc.path("error").asText()
                    : "");
      } else {
        for (JsonNode sandbox : doc.path("sandboxes")) {
          JsonNode owner = sandbox.path("owner");
          if (caller.mayUse(owner.isTextual() ? Optional.of(owner.asText()) : Optional.empty())) {
            sandboxes.add(sandbox);
          }
        }
      }
    } catch (CompletionException e) {
      error =
          "host agent at "
              + link.agent.address()
              + " is not reachable: "
              + AgentProxy.describe(e.getCause() == null ? e : e.getCause());
    } catch (IOException e) {
      error =
          "host agent at " + link.agent.address() + " answered unreadable JSON: " + e.getMessage();
    }
    host.put("healthy", error == null);
    host.put("error", error);
    host.put("sandboxes", sandboxes);
    return host;
  }
}
