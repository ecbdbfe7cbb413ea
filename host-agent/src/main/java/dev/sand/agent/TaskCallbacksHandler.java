package dev.sand.agent;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.agent.refusal.Refusal;
import dev.sand.contracts.Caller;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.TaskCallbackRoutes;
import dev.sand.contracts.TaskOutcomes;
import dev.sand.contracts.TaskToken;
import dev.sand.contracts.TaskTokens;
import dev.sand.contracts.TaskWaitStatus;
import dev.sand.service.JsonHttp;
import dev.sand.store.ExecutionRecord;
import dev.sand.store.StoreException;
import dev.sand.store.TaskWait;
import dev.sand.store.TaskWaitClaim;
import dev.sand.store.cassandra.CassandraStore;
import java.io.IOException;
import java.io.InputStream;
import java.time.Clock;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * Task callbacks forwarded by frontends (decision 0033; routes in {@link TaskCallbackRoutes}): the
 * token is verified with its app's key, the caller must own that app (or be an admin), then the
 * wait's row in {@code task_waits} is ended (complete) or its heartbeat moved (heartbeat) by a
 * lightweight transaction. A completion of a wait whose execution is recorded as ended is refused
 * (409) without writing: its outcome could never be used.
 *
 * <p>400 naming what is malformed, 403 another user's app, 409 saying how the wait ended, 503 while
 * Cassandra cannot answer. Blocking handler.
 */
final class TaskCallbacksHandler extends Handler.Abstract {
  // an output of 256 KiB as JSON text, a cause of 32768 characters escaped, and the token
  private static final int MAX_BODY = 1024 * 1024;

  private final Supplier<CassandraStore> cassandra;
  private final Ownership ownership;
  private final String secret;
  private final Clock clock;

  /**
   * @param secret {@code host_agent.secret}, which every app's token key derives from
   */
  TaskCallbacksHandler(
      Supplier<CassandraStore> cassandra, Ownership ownership, String secret, Clock clock) {
    this.cassandra = cassandra;
    this.ownership = ownership;
    this.secret = secret;
    this.clock = clock;
  }

  /** An answer: its HTTP status and JSON body. */
  record Answer(int status, Map<String, Object> body) {
    static Answer error(int status, String message) {
      return new Answer(status, Map.of("error", message));
    }
  }

  /**
   * A callback's fields, checked: the verified token and, for a completion, the status and outcome
   * to record.
   */
  record Call(String token, TaskToken claims, Optional<TaskWaitStatus> status, String outcome) {
    /**
     * Reads the body of {@code path} ({@link TaskCallbackRoutes}).
     *
     * @throws IllegalArgumentException naming the field or what is wrong with the token
     */
    static Call read(String path, JsonNode body, String secret) {
      if (body == null || !body.isObject()) {
        throw new IllegalArgumentException("body must be a JSON object");
      }
      JsonNode token = body.get("token");
      if (token == null || !token.isTextual()) {
        throw new IllegalArgumentException("token is required (a string)");
      }
      TaskToken claims = TaskTokens.verify(token.asText(), secret);
      if (TaskCallbackRoutes.HEARTBEAT.equals(path)) {
        return new Call(token.asText(), claims, Optional.empty(), null);
      }
      String named = body.path("status").asText("");
      TaskWaitStatus status;
      try {
        status = TaskWaitStatus.of(named);
      } catch (IllegalArgumentException e) {
        status = TaskWaitStatus.WAITING;
      }
      if (status != TaskWaitStatus.SUCCEEDED && status != TaskWaitStatus.FAILED) {
        throw new IllegalArgumentException(
            "status must be \"SUCCEEDED\" or \"FAILED\", got \"" + named + "\"");
      }
      String outcome = TaskOutcomes.check(status, body.get("outcome")).toString();
      return new Call(token.asText(), claims, Optional.of(status), outcome);
    }
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    String path = Request.getPathInContext(request);
    Answer answer;
    if (!"POST".equals(request.getMethod())) {
      response.getHeaders().put("Allow", "POST");
      answer = Answer.error(405, request.getMethod() + " not allowed on " + path + " (POST)");
    } else {
      answer = answer(path, request);
    }
    JsonHttp.send(response, callback, answer.status(), answer.body());
    return true;
  }

  private Answer answer(String path, Request request) {
    Call call;
    try {
      call = Call.read(path, body(request), secret);
    } catch (IllegalArgumentException e) {
      return Answer.error(400, e.getMessage());
    }
    CassandraStore store = cassandra.get();
    if (store == null) {
      return Answer.error(503, "the global data layer is not connected yet");
    }
    try {
      String app = call.claims().app();
      Caller caller = InternalAuth.callerOf(request);
      if (!caller.mayUse(ownership.owner(app))) {
        return Answer.error(
            403, "the task token belongs to application '" + app + "', which is not yours");
      }
      String hash = TaskTokens.hash(call.token());
      long now = clock.millis();
      if (call.status().isEmpty()) {
        return answer(store.taskWaits().heartbeat(hash, now), TaskWaitStatus.WAITING);
      }
      Optional<ExecutionRecord> execution = store.executions().find(call.claims().executionId());
      if (execution.isPresent() && execution.get().status() != ExecutionStatus.RUNNING) {
        return Answer.error(
            409,
            "execution '"
                + call.claims().executionId()
                + "' already ended ("
                + execution.get().status()
                + "): its task no longer waits");
      }
      TaskWaitStatus status = call.status().get();
      return answer(
          store
              .taskWaits()
              .complete(hash, app, call.claims().executionId(), status, call.outcome(), now),
          status);
    } catch (StoreException | Refusal e) {
      return Answer.error(503, "task callbacks cannot be recorded now: " + e.getMessage());
    }
  }

  /**
   * The answer to a callback whose transaction found {@code claim}; {@code status} is what it asked
   * for (WAITING for a heartbeat). A taken completion names the host and timer member to nudge.
   */
  static Answer answer(TaskWaitClaim claim, TaskWaitStatus status) {
    if (claim instanceof TaskWaitClaim.Ended ended) {
      return Answer.error(409, "the task is no longer waiting: " + how(ended));
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("status", status.name());
    if (status.ended()) {
      Optional<TaskWait> before =
          claim instanceof TaskWaitClaim.Taken taken ? taken.before() : Optional.empty();
      body.put("host", before.flatMap(TaskWait::host).orElse(null));
      body.put(
          "member",
          before
              .flatMap(TaskWait::member)
              .map(bytes -> Base64.getEncoder().encodeToString(bytes))
              .orElse(null));
    }
    return new Answer(200, body);
  }

  /** "already SUCCEEDED", or "timed out: States.HeartbeatTimeout". */
  private static String how(TaskWaitClaim.Ended ended) {
    if (ended.status() != TaskWaitStatus.TIMED_OUT) {
      return "already " + ended.status();
    }
    String error =
        ended
            .outcome()
            .map(
                text -> {
                  try {
                    return JsonHttp.MAPPER.readTree(text).path("error").asText("");
                  } catch (IOException e) {
                    return "";
                  }
                })
            .orElse("");
    return error.isEmpty() ? "timed out" : "timed out: " + error;
  }

  private static JsonNode body(Request request) {
    try (InputStream in = Content.Source.asInputStream(request)) {
      byte[] bytes = in.readNBytes(MAX_BODY + 1);
      if (bytes.length > MAX_BODY) {
        throw new IllegalArgumentException("body over " + MAX_BODY + " bytes");
      }
      return JsonHttp.MAPPER.readTree(bytes);
    } catch (IOException e) {
      throw new IllegalArgumentException("body is not JSON: " + e.getMessage(), e);
    }
  }
}
