package dev.sand.frontend;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.bus.EventCodec;
import dev.sand.bus.redis.LocalBusException;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.Caller;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.Keys;
import dev.sand.contracts.Names;
import dev.sand.contracts.ResultDocument;
import dev.sand.contracts.Topics;
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
  private final KafkaEntry kafka;
  private final List<String> frontendIds;
  private final String frontendId;
  private final Clock clock;

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
    this.kafka = kafka;
    this.frontendIds = List.copyOf(frontendIds);
    this.frontendId = frontendId;
    this.clock = clock;
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
      ResultDocument aborted = abort(doc, error, cause);
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
    try {
      Names.requireExecutionId(id);
    } catch (IllegalArgumentException e) {
      throw new Refused(HttpStatus.NOT_FOUND_404, "no execution '" + id + "': " + e.getMessage());
    }
    ResultDocument found = null;
    for (HostLinks.Link link : hosts.all()) {
      RedisLocalBus bus = link.bus;
      if (bus == null) {
        continue;
      }
      try {
        Optional<byte[]> raw = bus.get(Keys.result(id));
        if (raw.isPresent()) {
          ResultDocument doc = ResultDocument.parse(raw.get());
          if (found == null || doc.finished()) {
            found = doc;
          }
        }
      } catch (LocalBusException | IllegalArgumentException e) {
        // an unreachable host or an unreadable document: the record decides
      }
    }
    if (found != null && !caller.admin()) {
      String app = found.app();
      Optional<Boolean> mayUse;
      try {
        mayUse = hosts.first(link -> link.catalog.find(app)).map(m -> caller.mayUse(m.owner()));
      } catch (LocalBusException | IllegalStateException e) {
        mayUse = Optional.empty();
      }
      if (mayUse.isEmpty() || !mayUse.get()) {
        found = null; // no deployed app of theirs: the agent judges from the record
      }
    }
    if (found == null) {
      Optional<byte[]> recorded = hosts.agent().get("/v1/executions/" + id, caller);
      if (recorded.isPresent()) {
        try {
          found = ResultDocument.parse(recorded.get());
        } catch (IllegalArgumentException e) {
          throw new Refused(HttpStatus.BAD_GATEWAY_502, "unreadable record: " + e.getMessage());
        }
      }
    }
    if (found == null) {
      throw new Refused(HttpStatus.NOT_FOUND_404, "no execution '" + id + "' is recorded");
    }
    return found;
  }

  private ResultDocument abort(ResultDocument doc, String error, String cause) throws Refused {
    long now = clock.millis();
    ResultDocument aborted =
        new ResultDocument(
            doc.executionId(),
            doc.app(),
            doc.workflow(),
            ExecutionStatus.ABORTED,
            doc.startedMs(),
            now,
            null,
            error,
            cause,
            null,
            doc.input(),
            doc.name(),
            doc.redriveCount());
    byte[] body = aborted.toBytes();
    EventMessage result = event(aborted, EventKind.ERROR, body, now).setFlag(EventFlag.FAILED);
    result.setError(error).setCause(cause);
    byte[] encoded = EventCodec.encode(result);
    try {
      // the record first: once this is answered, the global data layer will say ABORTED
      kafka.publish(Topics.RESULTS, doc.executionId(), encoded, null);
      kafka.publish(
          Topics.HISTORY,
          doc.executionId(),
          EventCodec.encode(event(aborted, EventKind.HISTORY, abortedEvent(aborted, now), now)),
          null);
    } catch (KafkaEntry.EntryException e) {
      throw new Refused(
          HttpStatus.SERVICE_UNAVAILABLE_503,
          "cannot stop execution '" + doc.executionId() + "' now: " + e.getMessage());
    }
    boolean replied = false;
    String key = Keys.aborted(doc.app());
    long keepFrom = now - contractsConstants.ABORTED_KEEP_S * 1000L;
    for (HostLinks.Link link : hosts.all()) {
      RedisLocalBus bus = link.bus;
      if (bus == null) {
        continue;
      }
      try {
        byte[] member = doc.executionId().getBytes(StandardCharsets.UTF_8);
        bus.call("ZADD " + key, c -> c.zadd(bytes(key), (double) now, member));
        bus.call(
            "ZREMRANGEBYSCORE " + key,
            c -> c.zremrangebyscore(bytes(key), io.lettuce.core.Range.create(0L, keepFrom)));
        bus.set(Keys.result(doc.executionId()), body, ResultDocument.TTL);
        if (!replied) {
          for (String frontend : frontendIds) {
            bus.pushRaw(Keys.reply(frontend), encoded);
          }
          replied = true;
        }
      } catch (LocalBusException e) {
        // a host away: its workers see nothing until it is back, but its instances' results
        // lose to the record's ABORTED nowhere else: said in decision 0018
        LOG.atWarn()
            .addKeyValue("execution_id", doc.executionId())
            .addKeyValue("host", link.host.id())
            .addKeyValue("error", e.getMessage())
            .log("stop not written to a host's local bus");
      }
    }
    return aborted;
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

  private EventMessage event(ResultDocument doc, EventKind kind, byte[] payload, long now) {
    return new EventMessage()
        .setKind(kind)
        .setFlag(EventFlag.QUEUED)
        .setExecution_id(doc.executionId())
        .setEvent_id(Invoker.newId())
        .setApp(doc.app())
        .setWorkflow(doc.workflow() == null ? "" : doc.workflow())
        .setSource_grain("")
        .setTarget_grain("")
        .setPayload(payload)
        .setToken("")
        .setCreated_ms(now)
        .setDeadline_ms(0)
        .setAttempt(0)
        .setHost(frontendId)
        .setReply_to("")
        .setError("")
        .setCause("");
  }

  private byte[] abortedEvent(ResultDocument doc, long now) {
    ArrayNode list = JsonHttp.MAPPER.createArrayNode();
    ObjectNode event = list.addObject();
    event.put("type", "ExecutionAborted");
    event.put("at_ms", now);
    event.put("execution_id", doc.executionId());
    event.putNull("state");
    event.put("path", "");
    event.put("host", frontendId);
    event.put("error", doc.error());
    event.put("cause", doc.cause());
    try {
      return JsonHttp.MAPPER.writeValueAsBytes(list);
    } catch (IOException e) {
      throw new IllegalStateException("a JSON tree always serializes", e);
    }
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
