package dev.sand.frontend;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.bus.EventCodec;
import dev.sand.bus.redis.LocalBusException;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.HistoryTypes;
import dev.sand.contracts.Keys;
import dev.sand.contracts.ResultDocument;
import dev.sand.contracts.Topics;
import dev.sand.contracts.contractsConstants;
import dev.sand.service.JsonHttp;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.List;
import org.eclipse.jetty.http.HttpStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes a stop (decision 0018) everywhere an execution's end is read: the global bus's results and
 * history, every host's {@code sand:aborted:<app>} and result key, every frontend's reply queue.
 * Blocking (Kafka, Redis); thread-safe.
 */
final class AbortWriter {
  // the stop's name: the log lines it wrote before this class existed keep their logger
  private static final Logger LOG = LoggerFactory.getLogger(ExecutionControl.class);

  private final HostLinks hosts;
  private final KafkaEntry kafka;
  private final List<String> frontendIds;
  private final String frontendId;
  private final Clock clock;

  /**
   * @param frontendIds every frontend's id (their reply queues), this one included
   * @param frontendId this frontend: the host of the events it writes
   */
  AbortWriter(
      HostLinks hosts, KafkaEntry kafka, List<String> frontendIds, String frontendId, Clock clock) {
    this.hosts = hosts;
    this.kafka = kafka;
    this.frontendIds = List.copyOf(frontendIds);
    this.frontendId = frontendId;
    this.clock = clock;
  }

  /**
   * Ends {@code doc}'s execution as ABORTED with {@code error} and {@code cause}: the record and a
   * history event go to the global bus first (so Cassandra records it), then every host's Redis
   * gets the execution in {@code sand:aborted:<app>} and the ABORTED document, and every frontend's
   * waiting callers get it. A host away is logged and skipped.
   *
   * @return the ABORTED document
   * @throws Refused 503 when the global bus does not take the record
   */
  ResultDocument abort(ResultDocument doc, String error, String cause) throws Refused {
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
    event.put("type", HistoryTypes.EXECUTION_ABORTED);
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

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
