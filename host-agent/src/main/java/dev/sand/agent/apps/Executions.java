package dev.sand.agent.apps;

import dev.sand.bus.EventCodec;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.bus.thrift.sandConstants;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.Keys;
import dev.sand.contracts.ResultDocument;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.List;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends executions on behalf of the platform, when no grain will: an app undeployed while its events
 * wait, a sandbox that died too often under an event. Writes what a grain's own failure writes —
 * the FAILED result document at {@code sand:result:<execution>} (for {@link ResultDocument#TTL}),
 * the ERROR event (flag FAILED) to the synchronous caller's reply queue and to the agent queue,
 * from which it is recorded and published — so callers and clients see one kind of failure.
 *
 * <p>Thread-safe. Blocking: a few Redis round trips per execution; throws {@link
 * dev.sand.bus.redis.LocalBusException} when Redis refuses or is unreachable.
 */
public final class Executions {
  private static final Logger LOG = LoggerFactory.getLogger(Executions.class);

  /** The ASL error name of a failure of the platform rather than of the workflow. */
  public static final String RUNTIME_ERROR = "States.Runtime";

  private final String hostId;
  private final Clock clock;

  /**
   * @param hostId this host: the ERROR events carry it and go to its agent queue
   */
  public Executions(String hostId, Clock clock) {
    this.hostId = hostId;
    this.clock = clock;
  }

  /** Ends the execution of {@code source} with {@code error} (an ASL error name) and a cause. */
  public void fail(RedisLocalBus bus, EventMessage source, String error, String cause) {
    long now = clock.millis();
    ResultDocument doc =
        new ResultDocument(
            source.getExecution_id(),
            source.getApp(),
            source.getWorkflow(),
            ExecutionStatus.FAILED,
            startedMs(bus, source.getExecution_id()),
            now,
            null,
            error,
            cause == null ? "" : cause,
            null);
    byte[] body = doc.toBytes();
    bus.set(Keys.result(source.getExecution_id()), body, ResultDocument.TTL);
    EventMessage result =
        new EventMessage()
            .setExecution_id(source.getExecution_id())
            .setEvent_id(UUID.randomUUID().toString().replace("-", ""))
            .setApp(source.getApp())
            .setWorkflow(source.getWorkflow())
            .setKind(EventKind.ERROR)
            .setFlag(sandConstants.FINAL_FLAG.get(EventKind.ERROR))
            .setPayload(body)
            .setError(doc.error())
            .setCause(doc.cause())
            .setHost(hostId)
            .setCreated_ms(now)
            .setReply_to(source.getReply_to());
    if (source.getReply_to() != null && !source.getReply_to().isEmpty()) {
      bus.push(Keys.reply(source.getReply_to()), result);
    }
    bus.push(Keys.agent(hostId), result);
    String grain = source.getTarget_grain();
    if (grain != null && !grain.isEmpty() && source.getEvent_id() != null) {
      // the event itself is done with: its FAILED flag ends it on the global bus (sent once the
      // result above is safe there), so no host replays it
      bus.push(Keys.agent(hostId), source.deepCopy().setFlag(EventFlag.FAILED));
    }
  }

  /**
   * When the execution started, from its document in this host's Redis (0 when it is not there):
   * its record is listed under that time (decision 0018).
   */
  private static long startedMs(RedisLocalBus bus, String executionId) {
    try {
      return bus.get(Keys.result(executionId))
          .map(raw -> ResultDocument.parse(raw).startedMs())
          .orElse(0L);
    } catch (RuntimeException e) {
      return 0; // unreadable or unreachable: the record finds its start another way
    }
  }

  /**
   * Fails the execution of every event still waiting in the queues of {@code grains} of {@code
   * app}, with {@link #RUNTIME_ERROR} and {@code cause}; leaves the queues as they are. An entry
   * that does not decode is logged and skipped.
   *
   * @return how many executions were failed
   */
  public int failQueued(RedisLocalBus bus, String app, List<String> grains, String cause) {
    int failed = 0;
    for (String grain : grains) {
      String queue = Keys.grain(app, grain);
      List<byte[]> waiting =
          bus.call("LRANGE " + queue, c -> c.lrange(queue.getBytes(StandardCharsets.UTF_8), 0, -1));
      for (byte[] raw : waiting) {
        try {
          fail(bus, EventCodec.decode(raw), RUNTIME_ERROR, cause);
          failed++;
        } catch (RuntimeException e) {
          LOG.atWarn()
              .addKeyValue("queue", queue)
              .addKeyValue("error", e.toString())
              .log("unreadable event dropped");
        }
      }
    }
    return failed;
  }
}
