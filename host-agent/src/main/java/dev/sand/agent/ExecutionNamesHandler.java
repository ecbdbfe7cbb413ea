package dev.sand.agent;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.contracts.Names;
import dev.sand.service.InternalApi;
import dev.sand.service.JsonHttp;
import dev.sand.store.NameClaim;
import dev.sand.store.StoreException;
import dev.sand.store.cassandra.CassandraStore;
import java.io.IOException;
import java.io.InputStream;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * {@code /internal/executions/names}: the names of idempotent starts ({@code POST
 * /v1/apps/{app}/invoke?name=}), for frontends only (the agents' secret, like every agent route).
 *
 * <ul>
 *   <li>{@code POST} {@code {"app", "name", "execution_id", "input_sha256"}}: claims the name for
 *       the execution unless an execution holds it; 200 {@code {"execution_id", "claimed",
 *       "same_input"}} — the claimant's id and {@code claimed: true}, or the holder's id and
 *       whether its input had the same hash
 *   <li>{@code DELETE} with the same body: gives the name back if the execution still holds it (its
 *       start could not be queued); 200 {@code {"released": true}}
 * </ul>
 *
 * <p>400 naming a bad field, 503 while Cassandra cannot answer. Blocking handler.
 */
final class ExecutionNamesHandler extends Handler.Abstract {
  static final String PATH = InternalApi.EXECUTION_NAMES;
  private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");
  private static final int MAX_BODY = 4096;

  private final Supplier<CassandraStore> cassandra;

  ExecutionNamesHandler(Supplier<CassandraStore> cassandra) {
    this.cassandra = cassandra;
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    String method = request.getMethod();
    if (!"POST".equals(method) && !"DELETE".equals(method)) {
      response.getHeaders().put("Allow", "POST, DELETE");
      JsonHttp.error(response, callback, 405, method + " not allowed on " + PATH);
      return true;
    }
    Claim claim;
    try {
      claim = Claim.read(request);
    } catch (IllegalArgumentException e) {
      JsonHttp.error(response, callback, 400, e.getMessage());
      return true;
    }
    CassandraStore store = cassandra.get();
    if (store == null) {
      JsonHttp.error(response, callback, 503, "the global data layer is not connected yet");
      return true;
    }
    try {
      if ("DELETE".equals(method)) {
        store.names().release(claim.app, claim.name, claim.executionId);
        JsonHttp.send(response, callback, 200, Map.of("released", true));
        return true;
      }
      NameClaim held = store.names().claim(claim.app, claim.name, claim.executionId, claim.sha256);
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("execution_id", held.executionId());
      body.put("claimed", held.claimed());
      body.put("same_input", held.sameInput(claim.sha256));
      JsonHttp.send(response, callback, 200, body);
    } catch (StoreException e) {
      JsonHttp.error(
          response, callback, 503, "execution names cannot be claimed now: " + e.getMessage());
    }
    return true;
  }

  /** A claim's fields, checked. */
  private record Claim(String app, String name, String executionId, String sha256) {
    static Claim read(Request request) {
      JsonNode body;
      try (InputStream in = Content.Source.asInputStream(request)) {
        byte[] bytes = in.readNBytes(MAX_BODY + 1);
        if (bytes.length > MAX_BODY) {
          throw new IllegalArgumentException("body over " + MAX_BODY + " bytes");
        }
        body = JsonHttp.MAPPER.readTree(bytes);
      } catch (IOException e) {
        throw new IllegalArgumentException("body is not JSON: " + e.getMessage(), e);
      }
      if (body == null || !body.isObject()) {
        throw new IllegalArgumentException("body must be a JSON object");
      }
      String app = Names.requireApp(body.path("app").asText(null));
      String name = field(body, "name");
      try {
        Names.requireExecutionId(name); // names follow the execution id rule (NAME_EXECUTION)
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("name: " + e.getMessage(), e);
      }
      String id = Names.requireExecutionId(field(body, "execution_id"));
      String sha = body.path("input_sha256").asText("");
      if (!SHA256.matcher(sha).matches()) {
        throw new IllegalArgumentException(
            "input_sha256 must be 64 lowercase hex digits, got '" + sha + "'");
      }
      return new Claim(app, name, id, sha);
    }

    private static String field(JsonNode body, String name) {
      JsonNode value = body.get(name);
      if (value == null || !value.isTextual()) {
        throw new IllegalArgumentException(name + " is required (a string)");
      }
      return value.asText();
    }
  }
}
