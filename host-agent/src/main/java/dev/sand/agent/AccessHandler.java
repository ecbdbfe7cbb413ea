package dev.sand.agent;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.agent.refusal.Refusal;
import dev.sand.contracts.Caller;
import dev.sand.contracts.Names;
import dev.sand.contracts.Tokens;
import dev.sand.contracts.contractsConstants;
import dev.sand.service.InternalApi;
import dev.sand.service.JsonHttp;
import dev.sand.store.StoreException;
import dev.sand.store.TokenRecord;
import dev.sand.store.UserRecord;
import dev.sand.store.cassandra.AccessTable;
import dev.sand.store.cassandra.CassandraStore;
import java.io.IOException;
import java.io.InputStream;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * Users and tokens (decision 0017), kept in the global data layer ({@link AccessTable}), which the
 * frontends forward here:
 *
 * <ul>
 *   <li>{@code GET /v1/whoami}: the caller
 *   <li>{@code GET|POST /v1/users}, {@code DELETE /v1/users/{name}}: admins only
 *   <li>{@code GET|POST /v1/tokens}, {@code DELETE /v1/tokens/{id}}: one's own tokens; admins any
 *       user's
 *   <li>{@code GET /internal/principal} with {@code X-Sand-Token-Hash}: the system only (a frontend
 *       looking up a token it has not cached)
 * </ul>
 *
 * Blocking handler: each call is a few Cassandra requests.
 */
final class AccessHandler extends Handler.Abstract {
  static final String PRINCIPAL = InternalApi.PRINCIPAL;
  private static final int MAX_BODY_BYTES = 16 * 1024;
  private static final int MAX_LABEL = 100;
  private static final int MAX_EXPIRY_DAYS = 3650;

  private final Supplier<CassandraStore> cassandra;
  private final Clock clock;

  AccessHandler(Supplier<CassandraStore> cassandra, Clock clock) {
    this.cassandra = cassandra;
    this.clock = clock;
  }

  /** Its routes (Jetty path specs, {@link AgentRoutes}). */
  static final String[] PATHS = {"/v1/whoami", PRINCIPAL, "/v1/users/*", "/v1/tokens/*"};

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    String path = Request.getPathInContext(request);
    String method = request.getMethod();
    Caller caller = InternalAuth.callerOf(request);
    List<String> parts = new ArrayList<>(List.of(path.split("/")));
    parts.removeIf(String::isEmpty);
    try {
      if (path.equals("/v1/whoami")) {
        allow(method, "GET");
        JsonHttp.send(response, callback, 200, whoami(caller));
      } else if (path.equals(PRINCIPAL)) {
        allow(method, "GET");
        principal(request, caller, response, callback);
      } else if (parts.get(1).equals("users")) {
        requireAdmin(caller, "managing users");
        if (parts.size() == 2) {
          allow(method, "GET", "POST");
          if ("GET".equals(method)) {
            List<Map<String, Object>> users = new ArrayList<>();
            access().users().forEach(u -> users.add(user(u)));
            JsonHttp.send(response, callback, 200, Map.of("users", users));
          } else {
            JsonHttp.send(response, callback, 201, createUser(body(request)));
          }
        } else if (parts.size() == 3) {
          allow(method, "DELETE");
          JsonHttp.send(response, callback, 200, deleteUser(parts.get(2), caller));
        } else {
          throw new AccessRefused(AccessRefused.Reason.NOT_FOUND, "no such path: " + path);
        }
      } else if (parts.size() == 2) {
        allow(method, "GET", "POST");
        if ("GET".equals(method)) {
          String user = Request.extractQueryParameters(request).getValue("user");
          JsonHttp.send(response, callback, 200, Map.of("tokens", tokens(user, caller)));
        } else {
          JsonHttp.send(response, callback, 201, createToken(body(request), caller));
        }
      } else if (parts.size() == 3) {
        allow(method, "DELETE");
        JsonHttp.send(response, callback, 200, revoke(parts.get(2), caller));
      } else {
        throw new AccessRefused(AccessRefused.Reason.NOT_FOUND, "no such path: " + path);
      }
    } catch (Refusal e) {
      Refusals.answer(response, callback, e);
    } catch (NotAllowed e) {
      response.getHeaders().put(HttpHeader.ALLOW, e.allow);
      JsonHttp.error(response, callback, HttpStatus.METHOD_NOT_ALLOWED_405, e.getMessage());
    } catch (StoreException e) {
      JsonHttp.error(response, callback, HttpStatus.SERVICE_UNAVAILABLE_503, e.getMessage());
    }
    return true;
  }

  private static Map<String, Object> whoami(Caller caller) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("user", caller.user());
    body.put("role", caller.role());
    body.put("token_id", caller.tokenId());
    return body;
  }

  private void principal(Request request, Caller caller, Response response, Callback callback) {
    if (caller.user() != null) {
      throw new AccessRefused(
          AccessRefused.Reason.FORBIDDEN, "only the cluster's services look tokens up");
    }
    String hash = request.getHeaders().get(contractsConstants.HEADER_TOKEN_HASH);
    if (!Tokens.wellFormedHash(hash)) {
      throw new AccessRefused(
          AccessRefused.Reason.INVALID,
          contractsConstants.HEADER_TOKEN_HASH + " must be 64 lowercase hex digits");
    }
    Optional<AccessTable.Found> found = access().find(hash, clock.instant());
    if (found.isEmpty()) {
      throw new AccessRefused(AccessRefused.Reason.NOT_FOUND, "no such token");
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("user", found.get().user().name());
    body.put("role", found.get().user().role());
    body.put("token_id", found.get().tokenId());
    JsonHttp.send(response, callback, 200, body);
  }

  private Map<String, Object> createUser(JsonNode body) {
    String name = text(body, "name", null);
    if (name == null) {
      throw invalid("'name' is required: the user's name, like \"ada\"");
    }
    try {
      Names.requireUser(name);
    } catch (IllegalArgumentException e) {
      throw invalid("'name': " + e.getMessage());
    }
    String role = text(body, "role", contractsConstants.ROLE_USER);
    try {
      Caller.isAdmin(role);
    } catch (IllegalArgumentException e) {
      throw invalid("'role': " + e.getMessage());
    }
    UserRecord user = new UserRecord(name, role, clock.instant());
    if (!access().createUser(user)) {
      throw new AccessRefused(
          AccessRefused.Reason.CONFLICT, "a user named '" + name + "' already exists");
    }
    return user(user);
  }

  private Map<String, Object> deleteUser(String name, Caller caller) {
    if (name.equals(caller.user())) {
      throw invalid("you cannot delete the user you are signed in as ('" + name + "')");
    }
    if (access().user(name).isEmpty()) {
      throw new AccessRefused(AccessRefused.Reason.NOT_FOUND, "no user '" + name + "'");
    }
    int revoked = access().deleteUser(name);
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("deleted", name);
    body.put("tokens_revoked", revoked);
    return body;
  }

  private List<Map<String, Object>> tokens(String user, Caller caller) {
    Optional<String> whose;
    if (user != null && !user.equals(caller.user())) {
      requireAdmin(caller, "listing another user's tokens");
      whose = Optional.of(user);
    } else {
      // the system (no user of its own) lists every token
      whose = Optional.ofNullable(caller.user());
    }
    List<Map<String, Object>> tokens = new ArrayList<>();
    access().tokens(whose).forEach(t -> tokens.add(token(t)));
    return tokens;
  }

  private Map<String, Object> createToken(JsonNode body, Caller caller) {
    String user = text(body, "user", caller.user());
    if (user == null) {
      throw invalid("'user' is required: whose token to make");
    }
    try {
      Names.requireUser(user);
    } catch (IllegalArgumentException e) {
      throw invalid("'user': " + e.getMessage());
    }
    if (!user.equals(caller.user())) {
      requireAdmin(caller, "making a token for another user");
    }
    String label = text(body, "label", "");
    if (label.length() > MAX_LABEL) {
      throw invalid("'label' must be at most " + MAX_LABEL + " characters");
    }
    Instant now = clock.instant();
    Instant expires = null;
    JsonNode days = body.path("expires_in_days");
    if (!days.isMissingNode() && !days.isNull()) {
      if (!days.canConvertToInt() || days.asInt() < 1 || days.asInt() > MAX_EXPIRY_DAYS) {
        throw invalid(
            "'expires_in_days' must be an integer 1.." + MAX_EXPIRY_DAYS + ", got " + days);
      }
      expires = now.plus(Duration.ofDays(days.asInt()));
    }
    if (access().user(user).isEmpty()) {
      throw new AccessRefused(AccessRefused.Reason.NOT_FOUND, "no user '" + user + "'");
    }
    String token = Tokens.generate();
    TokenRecord record = new TokenRecord(Tokens.newId(), user, label, now, expires);
    access().createToken(record, Tokens.hash(token));
    Map<String, Object> answer = new LinkedHashMap<>();
    answer.put("id", record.id());
    answer.put("token", token);
    answer.putAll(token(record));
    return answer;
  }

  private Map<String, Object> revoke(String id, Caller caller) {
    Optional<TokenRecord> token = access().token(id);
    // another user's token is answered as a missing one
    if (token.isEmpty() || !caller.mayUse(Optional.of(token.get().user()))) {
      throw new AccessRefused(AccessRefused.Reason.NOT_FOUND, "no token '" + id + "'");
    }
    access().revoke(id);
    return Map.of("revoked", id);
  }

  private static Map<String, Object> user(UserRecord user) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("name", user.name());
    body.put("role", user.role());
    body.put("created", iso(user.created()));
    return body;
  }

  private static Map<String, Object> token(TokenRecord token) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("id", token.id());
    body.put("user", token.user());
    body.put("label", token.label());
    body.put("created", iso(token.created()));
    body.put("expires", iso(token.expires()));
    return body;
  }

  private static String iso(Instant at) {
    return at == null ? null : at.toString();
  }

  private static void requireAdmin(Caller caller, String what) {
    if (!caller.admin()) {
      throw new AccessRefused(AccessRefused.Reason.FORBIDDEN, what + " requires the admin role");
    }
  }

  private static String text(JsonNode body, String field, String fallback) {
    JsonNode value = body.path(field);
    if (value.isMissingNode() || value.isNull()) {
      return fallback;
    }
    if (!value.isTextual()) {
      throw invalid("'" + field + "' must be a string, got " + value);
    }
    return value.asText();
  }

  private static JsonNode body(Request request) {
    try (InputStream in = Content.Source.asInputStream(request)) {
      byte[] bytes = in.readNBytes(MAX_BODY_BYTES + 1);
      if (bytes.length > MAX_BODY_BYTES) {
        throw invalid("the request body is over " + MAX_BODY_BYTES + " bytes");
      }
      JsonNode body = bytes.length == 0 ? null : JsonHttp.MAPPER.readTree(bytes);
      if (body == null || !body.isObject()) {
        throw invalid("the request body must be a JSON object");
      }
      return body;
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw invalid("the request body is not JSON: " + e.getOriginalMessage());
    } catch (IOException e) {
      throw invalid("cannot read the request body: " + e.getMessage());
    }
  }

  private AccessTable access() {
    return Ownership.access(cassandra);
  }

  private static AccessRefused invalid(String problem) {
    return new AccessRefused(AccessRefused.Reason.INVALID, problem);
  }

  private static void allow(String method, String... allowed) {
    for (String m : allowed) {
      if (m.equals(method)) {
        return;
      }
    }
    throw new NotAllowed(String.join(", ", allowed), method);
  }

  /** A method the path does not take. */
  private static final class NotAllowed extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String allow;

    NotAllowed(String allow, String method) {
      super(method + " not allowed (allowed: " + allow + ")", null, false, false);
      this.allow = allow;
    }
  }
}
