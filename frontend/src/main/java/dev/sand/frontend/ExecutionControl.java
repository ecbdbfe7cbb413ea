package dev.sand.frontend;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.bus.redis.LocalBusException;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.contracts.Caller;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.Keys;
import dev.sand.contracts.ResultDocument;
import dev.sand.contracts.contractsConstants;
import dev.sand.service.JsonHttp;
import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code POST /v1/executions/{id}/stop} and {@code POST /v1/executions/{id}/redrive} (decision
 * 0018).
 *
 * <p>Stop: the ABORTED document goes to the global bus's results first (so Cassandra records it),
 * then into every host's Redis: the execution joins {@code sand:aborted:<app>}, whose members grain
 * workers kill and drop (within about 0.25 s) and whose results instances no longer write; the
 * document replaces the RUNNING one; a synchronous caller waiting on any frontend is answered with
 * it. Events of the execution still queued end when an instance takes them.
 *
 * <p>Redrive: from the execution's history, the top-level state that was entered last and never
 * exited is entered again with the input it had then (its Retry counts from zero; a Parallel or Map
 * state runs all its branches or items again); the execution keeps its id, input and start time.
 */
final class ExecutionControl {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutionControl.class);
  private static final int MAX_BODY_BYTES = 64 * 1024;
  private static final int HISTORY_PAGE = 1000;
  // the longest a grain worker takes to see that an execution left sand:aborted:<app>
  private static final long WORKERS_SEE_MS = 600;
  static final String DEFAULT_ERROR = "States.Aborted";

  private final HostLinks hosts;
  private final InvokeRoute invoke;
  private final ExecutionLookup lookup;
  private final AbortWriter aborts;

  /**
   * @param frontendIds every frontend's id (their reply queues), this one included
   */
  ExecutionControl(
      HostLinks hosts,
      InvokeRoute invoke,
      KafkaEntry kafka,
      List<String> frontendIds,
      String frontendId,
      Clock clock) {
    this.hosts = hosts;
    this.invoke = invoke;
    this.lookup = new ExecutionLookup(hosts);
    this.aborts = new AbortWriter(hosts, kafka, frontendIds, frontendId, clock);
  }

  void stop(String id, Caller caller, Request request, Response response, Callback callback) {
    try {
      ResultDocument doc = find(id, caller);
      if (doc.finished()) {
        throw new Refused(
            HttpStatus.CONFLICT_409,
            "execution '" + id + "' already ended (" + doc.status() + "): nothing to stop");
      }
      JsonNode body = body(request);
      String error = text(body, "error", DEFAULT_ERROR);
      String cause = text(body, "cause", "stopped by " + caller.user());
      ResultDocument aborted = aborts.abort(doc, error, cause);
      LOG.atInfo()
          .addKeyValue("execution_id", id)
          .addKeyValue("app", doc.app())
          .addKeyValue("user", caller.user())
          .log("execution stopped");
      JsonHttp.send(response, callback, HttpStatus.OK_200, aborted.toJson());
    } catch (Refused e) {
      JsonHttp.error(response, callback, e.status, e.getMessage());
    }
  }

  void redrive(String id, Caller caller, Response response, Callback callback) {
    try {
      ResultDocument doc = find(id, caller);
      if (doc.status() != ExecutionStatus.FAILED && doc.status() != ExecutionStatus.ABORTED) {
        throw new Refused(
            HttpStatus.CONFLICT_409,
            "execution '"
                + id
                + "' is "
                + doc.status()
                + ": only a FAILED or ABORTED execution can be redriven");
      }
      Redrive plan = Redrive.of(id, history(id, caller));
      if (doc.status() == ExecutionStatus.ABORTED) {
        readmit(doc.app(), id);
      }
      Map<String, String> headers = new HashMap<>();
      headers.put(contractsConstants.HEADER_REDRIVE_STATE, plan.state());
      headers.put(contractsConstants.HEADER_REDRIVE_INPUT, plan.stateInput().toString());
      headers.put(contractsConstants.HEADER_REDRIVE_VARIABLES, plan.variables().toString());
      if (!plan.kept().isEmpty()) {
        headers.put(contractsConstants.HEADER_REDRIVE_KEPT, plan.kept().toString());
      }
      headers.put(contractsConstants.HEADER_REDRIVE_COUNT, Integer.toString(plan.count()));
      headers.put(contractsConstants.HEADER_STARTED_MS, Long.toString(plan.startedMs()));
      if (plan.name() != null) {
        headers.put(contractsConstants.HEADER_NAME, plan.name());
      }
      byte[] input = JsonHttp.MAPPER.writeValueAsBytes(plan.executionInput());
      invoke.resubmit(doc.app(), plan.workflow(), id, input, headers, caller);
      LOG.atInfo()
          .addKeyValue("execution_id", id)
          .addKeyValue("app", doc.app())
          .addKeyValue("from_state", plan.state())
          .addKeyValue("redrive_count", plan.count())
          .log("execution redriven");
      ResultDocument running =
          new ResultDocument(
              id,
              doc.app(),
              plan.workflow(),
              ExecutionStatus.RUNNING,
              plan.startedMs(),
              0,
              null,
              null,
              null,
              null,
              null,
              plan.name(),
              plan.count());
      response.getHeaders().put(InvokeRoute.EXECUTION_HEADER, id);
      JsonHttp.send(response, callback, HttpStatus.ACCEPTED_202, running.toJson());
    } catch (Refused e) {
      JsonHttp.error(response, callback, e.status, e.getMessage());
    } catch (IOException e) {
      JsonHttp.error(response, callback, HttpStatus.INTERNAL_SERVER_ERROR_500, e.getMessage());
    }
  }

  /**
   * The execution's document: in a host's Redis (a finished one wins over a RUNNING one), else its
   * record in the global data layer; 404 for a missing execution or another user's.
   */
  ResultDocument find(String id, Caller caller) throws Refused {
    return lookup.find(id, caller);
  }

  /** The execution leaves {@code sand:aborted:<app>}; returns once workers have seen it. */
  private void readmit(String app, String id) throws Refused {
    String key = Keys.aborted(app);
    for (HostLinks.Link link : hosts.all()) {
      RedisLocalBus bus = link.bus;
      if (bus == null) {
        continue;
      }
      try {
        bus.call("ZREM " + key, c -> c.zrem(bytes(key), bytes(id)));
      } catch (LocalBusException e) {
        throw new Refused(
            HttpStatus.SERVICE_UNAVAILABLE_503,
            "cannot redrive execution '"
                + id
                + "' now: host "
                + link.host.id()
                + " does not answer ("
                + e.getMessage()
                + ")");
      }
    }
    try {
      Thread.sleep(WORKERS_SEE_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Every history event of the execution, through the host agents' paged history. */
  private List<JsonNode> history(String id, Caller caller) throws Refused {
    List<JsonNode> events = new ArrayList<>();
    String page = null;
    do {
      String path = "/v1/executions/" + id + "/history?limit=" + HISTORY_PAGE;
      if (page != null) {
        path += "&page=" + URLEncoder.encode(page, StandardCharsets.UTF_8);
      }
      Optional<AgentProxy.Answer> answer = hosts.agent().fetch(path, caller);
      if (answer.isPresent() && answer.get().status() == HttpStatus.NOT_FOUND_404) {
        return events; // no history recorded: Redrive.of says why that cannot be redriven
      }
      if (answer.isEmpty() || answer.get().status() != HttpStatus.OK_200) {
        throw new Refused(
            HttpStatus.SERVICE_UNAVAILABLE_503,
            "the history of execution '" + id + "' cannot be read now");
      }
      JsonNode doc;
      try {
        doc = JsonHttp.MAPPER.readTree(answer.get().body());
      } catch (IOException e) {
        throw new Refused(HttpStatus.BAD_GATEWAY_502, "unreadable history: " + e.getMessage());
      }
      doc.path("events").forEach(events::add);
      JsonNode next = doc.get("next_page");
      page = next == null || next.isNull() ? null : next.asText();
    } while (page != null);
    return events;
  }

  /** The optional JSON object body of a stop; 400 when it is something else. */
  private static JsonNode body(Request request) throws Refused {
    byte[] raw =
        RequestBodies.read(
            request,
            MAX_BODY_BYTES,
            length -> "the body of a stop is at most " + MAX_BODY_BYTES + " bytes");
    if (RequestBodies.blank(raw)) {
      return JsonHttp.MAPPER.createObjectNode();
    }
    return RequestBodies.object(
        raw, "the body of a stop must be a JSON object with optional \"error\" and \"cause\"");
  }

  private static String text(JsonNode body, String field, String fallback) throws Refused {
    JsonNode value = body.get(field);
    if (value == null || value.isNull()) {
      return fallback;
    }
    if (!value.isTextual() || value.asText().isEmpty() || value.asText().length() > 256) {
      throw new Refused(
          HttpStatus.BAD_REQUEST_400, "\"" + field + "\" must be a string of 1 to 256 characters");
    }
    return value.asText();
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
