package dev.sand.frontend;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.bus.redis.LocalBusException;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.contracts.Caller;
import dev.sand.contracts.Keys;
import dev.sand.contracts.ResultDocument;
import dev.sand.contracts.TaskCallbackRoutes;
import dev.sand.contracts.TaskOutcomes;
import dev.sand.contracts.TaskToken;
import dev.sand.contracts.TaskTokens;
import dev.sand.contracts.TaskWaitStatus;
import dev.sand.service.JsonHttp;
import io.lettuce.core.ZAddArgs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.Base64;
import java.util.Map;
import java.util.Set;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code POST /v1/tasks/{token}/success|failure|heartbeat} (callbacks, decision 0033): checks the
 * token's shape and the body, forwards to a host agent ({@link TaskCallbackRoutes}), which verifies
 * the token, checks that the caller owns its app and ends (or extends) the wait in Cassandra. On a
 * completion the timer of the wait is then moved to now in its host's {@code sand:timers} ({@code
 * ZADD XX}), so the task goes on at once rather than at its deadline; a host away is skipped (the
 * timer fires at its deadline, and finds the outcome then). The client gets {@code {"status"}}
 * only. Blocking; thread-safe.
 */
final class TaskCallbacks {
  private static final Logger LOG = LoggerFactory.getLogger(TaskCallbacks.class);

  /** The largest body of a callback, as Step Functions' SendTaskSuccess output. */
  static final int MAX_BODY_BYTES = 256 * 1024;

  // what the agent may answer that the client should see as it is; anything else is the agent's
  private static final Set<Integer> PASSED =
      Set.of(
          HttpStatus.BAD_REQUEST_400,
          HttpStatus.FORBIDDEN_403,
          HttpStatus.CONFLICT_409,
          HttpStatus.SERVICE_UNAVAILABLE_503);

  /** An execution's document as the caller may see it ({@link ExecutionControl#find}). */
  @FunctionalInterface
  interface Executions {
    ResultDocument find(String id, Caller caller) throws Refused;
  }

  private final HostLinks hosts;
  private final Clock clock;
  private final Executions executions;

  TaskCallbacks(HostLinks hosts, Clock clock, Executions executions) {
    this.hosts = hosts;
    this.clock = clock;
    this.executions = executions;
  }

  /** What to ask an agent: its internal route and the JSON body. */
  record Forward(String path, ObjectNode body) {}

  /**
   * Answers {@code action} ({@code success}, {@code failure}, {@code heartbeat}) on {@code token}
   * for {@code caller}; completes {@code callback}.
   */
  void handle(
      String token,
      String action,
      Caller caller,
      Request request,
      Response response,
      Callback callback) {
    try {
      TaskToken claims = claims(token);
      int limit = limit(claims.app());
      byte[] body =
          RequestBodies.read(
              request,
              limit,
              length ->
                  "a callback body is at most " + limit + " bytes for this app, got " + length);
      Forward forward = forward(token, action, body);
      if (TaskCallbackRoutes.COMPLETE.equals(forward.path())) {
        refuseIfEnded(claims, caller);
      }
      JsonNode answer = call(forward, caller);
      if (TaskCallbackRoutes.COMPLETE.equals(forward.path())) {
        nudge(answer, claims);
        LOG.atInfo()
            .addKeyValue("execution_id", claims.executionId())
            .addKeyValue("app", claims.app())
            .addKeyValue("user", caller.user())
            .addKeyValue("status", answer.path("status").asText())
            .log("task callback recorded");
      }
      JsonHttp.send(
          response,
          callback,
          HttpStatus.OK_200,
          Map.of("status", answer.path("status").asText(TaskWaitStatus.WAITING.name())));
    } catch (Refused e) {
      JsonHttp.error(response, callback, e.status, e.getMessage());
    }
  }

  /**
   * 409 when the token's execution has ended (stopped, say): its status document says so at once,
   * while its record in Cassandra follows later. An execution the caller may not see is left to the
   * agent, which answers 403 for another user's token.
   */
  private void refuseIfEnded(TaskToken claims, Caller caller) throws Refused {
    ResultDocument doc;
    try {
      doc = executions.find(claims.executionId(), caller);
    } catch (Refused e) {
      return;
    }
    if (doc.finished()) {
      throw new Refused(
          HttpStatus.CONFLICT_409,
          "execution '"
              + claims.executionId()
              + "' already ended ("
              + doc.status()
              + "): its task no longer waits");
    }
  }

  /** What {@code token} claims by its shape (the agent checks its signature); 400 otherwise. */
  static TaskToken claims(String token) throws Refused {
    try {
      return TaskTokens.parse(token);
    } catch (IllegalArgumentException e) {
      throw new Refused(HttpStatus.BAD_REQUEST_400, e.getMessage());
    }
  }

  /**
   * The agent request for {@code action} with the client's {@code body}: success needs a JSON
   * object with {@code output}; failure takes an optional {@code error} (up to 256 characters) and
   * {@code cause} (up to 32768); heartbeat takes no body (one sent is ignored).
   *
   * @throws Refused 400 naming the field, 404 for an unknown action
   */
  static Forward forward(String token, String action, byte[] body) throws Refused {
    ObjectNode request = JsonHttp.MAPPER.createObjectNode();
    request.put("token", token);
    switch (action) {
      case "heartbeat":
        return new Forward(TaskCallbackRoutes.HEARTBEAT, request);
      case "success":
        {
          JsonNode doc =
              RequestBodies.object(body, "the body must be a JSON object {\"output\": <JSON>}");
          if (!doc.has("output")) {
            throw new Refused(
                HttpStatus.BAD_REQUEST_400, "output is required (any JSON value, null included)");
          }
          request.put("status", TaskWaitStatus.SUCCEEDED.name());
          request.set("outcome", TaskOutcomes.succeeded(doc.get("output")));
          return new Forward(TaskCallbackRoutes.COMPLETE, request);
        }
      case "failure":
        {
          JsonNode doc =
              RequestBodies.blank(body)
                  ? request.objectNode()
                  : RequestBodies.object(
                      body, "the body must be a JSON object {\"error\", \"cause\"}");
          try {
            request.set("outcome", TaskOutcomes.failed(text(doc, "error"), text(doc, "cause")));
          } catch (IllegalArgumentException e) {
            throw new Refused(HttpStatus.BAD_REQUEST_400, e.getMessage());
          }
          request.put("status", TaskWaitStatus.FAILED.name());
          return new Forward(TaskCallbackRoutes.COMPLETE, request);
        }
      default:
        throw new Refused(
            HttpStatus.NOT_FOUND_404,
            "no such path: /v1/tasks/{token}/" + action + " (success, failure or heartbeat)");
    }
  }

  private static String text(JsonNode doc, String field) throws Refused {
    JsonNode value = doc.get(field);
    if (value == null || value.isNull()) {
      return null;
    }
    if (!value.isTextual()) {
      throw new Refused(HttpStatus.BAD_REQUEST_400, field + " must be a string");
    }
    return value.asText();
  }

  /**
   * The body limit for a callback of {@code app}: its own {@code payload_kb} when a host has its
   * metadata, never over {@link #MAX_BODY_BYTES} (an outcome is stored in one Cassandra cell and
   * one event header).
   */
  private int limit(String app) {
    try {
      return hosts
          .first(link -> link.catalog.find(app))
          .filter(m -> m.payloadKb().isPresent())
          .map(m -> (int) Math.min(MAX_BODY_BYTES, m.payloadKb().getAsInt() * 1024L))
          .orElse(MAX_BODY_BYTES);
    } catch (LocalBusException | IllegalStateException e) {
      return MAX_BODY_BYTES; // the agent decides whether the app is there
    }
  }

  /** The agent's 200 answer; its refusal as it is (400, 403, 409, 503), else 502. */
  private JsonNode call(Forward forward, Caller caller) throws Refused {
    AgentProxy agent = hosts.agent();
    AgentProxy.Answer answer;
    try {
      answer =
          agent.call(
              "POST", forward.path(), JsonHttp.MAPPER.writeValueAsBytes(forward.body()), caller);
    } catch (IOException e) {
      throw new Refused(
          HttpStatus.SERVICE_UNAVAILABLE_503,
          "host agent at " + agent.address() + " is not reachable: " + AgentProxy.describe(e));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new Refused(HttpStatus.SERVICE_UNAVAILABLE_503, "interrupted while forwarding");
    }
    JsonNode doc;
    try {
      doc = JsonHttp.MAPPER.readTree(answer.body());
    } catch (IOException e) {
      doc = null;
    }
    if (answer.status() == HttpStatus.OK_200 && doc != null) {
      return doc;
    }
    String said =
        doc != null && doc.path("error").isTextual()
            ? doc.path("error").asText()
            : new String(answer.body(), StandardCharsets.UTF_8);
    if (PASSED.contains(answer.status())) {
      throw new Refused(answer.status(), said);
    }
    throw new Refused(
        HttpStatus.BAD_GATEWAY_502,
        "host agent at " + agent.address() + " answered " + answer.status() + ": " + said);
  }

  /**
   * Moves the wait's timer to now on its host ({@code ZADD XX}: a timer already fired is not made
   * again). Skipped when the agent named none (the callback came before the registration, which
   * then fires at once) or the host is away (its timer fires at its deadline).
   */
  private void nudge(JsonNode answer, TaskToken claims) {
    JsonNode host = answer.get("host");
    JsonNode member = answer.get("member");
    if (host == null || !host.isTextual() || member == null || !member.isTextual()) {
      return;
    }
    for (HostLinks.Link link : hosts.all()) {
      RedisLocalBus bus = link.bus;
      if (!link.host.id().equals(host.asText()) || bus == null) {
        continue;
      }
      try {
        byte[] timer = Base64.getDecoder().decode(member.asText());
        byte[] key = Keys.timers().getBytes(StandardCharsets.UTF_8);
        double now = clock.millis();
        bus.call("ZADD XX " + Keys.timers(), c -> c.zadd(key, ZAddArgs.Builder.xx(), now, timer));
      } catch (LocalBusException | IllegalArgumentException e) {
        LOG.atWarn()
            .addKeyValue("execution_id", claims.executionId())
            .addKeyValue("host_id", host.asText())
            .addKeyValue("error", e.getMessage())
            .log("callback timer not nudged; it fires at its deadline");
      }
      return;
    }
  }
}
