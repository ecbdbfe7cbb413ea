package dev.sand.frontend;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.bus.redis.LocalBusException;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.contracts.Caller;
import dev.sand.contracts.Keys;
import dev.sand.contracts.ResultDocument;
import dev.sand.contracts.contractsConstants;
import dev.sand.service.InternalApi;
import dev.sand.service.JsonHttp;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * Idempotent starts ({@code POST /v1/apps/{app}/invoke?name=NAME}, decision 0018): the first start
 * with a name claims it for its execution (a lightweight transaction in Cassandra, through a host
 * agent's {@code /internal/executions/names}); a later start with the same name and the same input
 * is answered with that execution, one with another input is refused (409). "The same input" is the
 * same compact JSON text (the body as parsed and written back, so whitespace does not matter, key
 * order does). Starts without a name never come here. Blocking; thread-safe.
 */
final class ExecutionNames {
  /** The INVOKE event header that carries the name to the entry grain's ExecutionStarted event. */
  static final String NAME_HEADER = contractsConstants.HEADER_NAME;

  /** The response header that marks the answer of a start that found its execution running. */
  static final String EXISTING_HEADER = "X-Sand-Existing";

  private static final String PATH = InternalApi.EXECUTION_NAMES;
  private static final Pattern NAME = Pattern.compile(contractsConstants.NAME_EXECUTION);

  private final HostLinks hosts;

  ExecutionNames(HostLinks hosts) {
    this.hosts = hosts;
  }

  /**
   * {@code name} if it is a valid execution name.
   *
   * @throws IllegalArgumentException naming the rule and the value
   */
  static String check(String name) {
    if (name == null || !NAME.matcher(name).matches()) {
      throw new IllegalArgumentException(
          "name must be 1 to 128 letters, digits, '_' or '-', starting with a letter or digit ("
              + contractsConstants.NAME_EXECUTION
              + "), got '"
              + name
              + "'");
    }
    return name;
  }

  /** The SHA-256 of {@code input} as 64 lowercase hex digits. */
  static String sha256(byte[] input) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(input));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JVM has SHA-256", e);
    }
  }

  /**
   * Claims the name of {@code invocation} for it. Empty when claimed (the start goes on), else the
   * id of the execution that holds the name with the same input.
   *
   * @throws Refused 409 when the name's execution had another input; 503 when no agent answers
   */
  Optional<String> claim(Invocation invocation, Caller caller) throws Refused {
    JsonNode answer = send("POST", invocation, caller);
    String holder = answer.path("execution_id").asText();
    if (answer.path("claimed").asBoolean(false)) {
      return Optional.empty();
    }
    if (!answer.path("same_input").asBoolean(false)) {
      throw new Refused(
          HttpStatus.CONFLICT_409,
          "an execution named '"
              + invocation.name()
              + "' of application '"
              + invocation.app()
              + "' was started with a different input (execution "
              + holder
              + "); send the same input or choose another name");
    }
    return Optional.of(holder);
  }

  /** Gives the name of {@code invocation} back (its start could not be queued); best effort. */
  void release(Invocation invocation, Caller caller) {
    try {
      send("DELETE", invocation, caller);
    } catch (Refused e) {
      // the name then keeps pointing at an execution that never ran, until it expires
    }
  }

  /**
   * Answers a start that found its execution: headers {@value #EXISTING_HEADER}: 1 and the
   * execution's id; its current document, 200 for a synchronous caller when it finished, else 202.
   */
  void answerExisting(
      String executionId, boolean sync, Caller caller, Response response, Callback callback) {
    ResultDocument doc = current(executionId, caller);
    response.getHeaders().put(EXISTING_HEADER, "1");
    response.getHeaders().put(InvokeRoute.EXECUTION_HEADER, executionId);
    int status = sync && doc.finished() ? HttpStatus.OK_200 : HttpStatus.ACCEPTED_202;
    JsonHttp.send(response, callback, status, doc.toJson());
  }

  /**
   * The execution's document: a finished one from any host's Redis, else its record (through an
   * agent), else a RUNNING one from Redis, else a bare RUNNING document (just claimed, not yet
   * queued by the other start).
   */
  private ResultDocument current(String executionId, Caller caller) {
    ResultDocument running = null;
    for (HostLinks.Link link : hosts.all()) {
      RedisLocalBus bus = link.bus;
      if (bus == null) {
        continue;
      }
      try {
        Optional<byte[]> found = bus.get(Keys.result(executionId));
        if (found.isPresent()) {
          ResultDocument doc = ResultDocument.parse(found.get());
          if (doc.finished()) {
            return doc;
          }
          running = doc;
        }
      } catch (LocalBusException | IllegalArgumentException e) {
        // this host is away or holds something else: the record decides
      }
    }
    Optional<ResultDocument> recorded =
        hosts
            .agent()
            .get("/v1/executions/" + executionId, caller)
            .flatMap(
                body -> {
                  try {
                    return Optional.of(ResultDocument.parse(body));
                  } catch (IllegalArgumentException e) {
                    return Optional.empty();
                  }
                });
    if (recorded.isPresent() && (recorded.get().finished() || running == null)) {
      return recorded.get();
    }
    return running != null ? running : ResultDocument.running(executionId, null, null, 0);
  }

  private JsonNode send(String method, Invocation invocation, Caller caller) throws Refused {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("app", invocation.app());
    body.put("name", invocation.name());
    body.put("execution_id", invocation.executionId());
    body.put("input_sha256", sha256(invocation.input()));
    AgentProxy.Answer answer;
    try {
      answer = hosts.agent().call(method, PATH, JsonHttp.MAPPER.writeValueAsBytes(body), caller);
    } catch (IOException e) {
      throw new Refused(
          HttpStatus.SERVICE_UNAVAILABLE_503,
          "execution names cannot be checked now: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new Refused(HttpStatus.SERVICE_UNAVAILABLE_503, "interrupted while claiming the name");
    }
    String text = new String(answer.body(), StandardCharsets.UTF_8);
    if (answer.status() != HttpStatus.OK_200) {
      throw new Refused(
          answer.status() / 100 == 4
              ? HttpStatus.BAD_REQUEST_400
              : HttpStatus.SERVICE_UNAVAILABLE_503,
          "execution name '" + invocation.name() + "': " + text);
    }
    try {
      return JsonHttp.MAPPER.readTree(answer.body());
    } catch (IOException e) {
      throw new Refused(
          HttpStatus.SERVICE_UNAVAILABLE_503, "the host agent answered a name claim with " + text);
    }
  }
}
