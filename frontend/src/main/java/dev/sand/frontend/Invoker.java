package dev.sand.frontend;

import dev.sand.bus.EventCodec;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.Keys;
import dev.sand.contracts.Names;
import dev.sand.contracts.ResultDocument;
import dev.sand.contracts.Topics;
import io.lettuce.core.ScriptOutputType;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * Puts invocations on the local bus (decision 0004): the RUNNING status document, the host agent's
 * copy (flag PROCESSING) and the INVOKE event on the entry grain's queue, in that order; and their
 * backup on the global bus (decision 0011).
 *
 * <p>The three writes run as one Lua script, so they are atomic and ordered: no worker can take the
 * event before its backup and status exist, and a failed call leaves nothing half-written.
 * Thread-safe; {@link #submit} blocks on one Redis round trip.
 */
final class Invoker {
  private static final byte[] SCRIPT =
      """
      redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
      if ARGV[3] ~= '' then redis.call('LPUSH', KEYS[2], ARGV[3]) end
      redis.call('LPUSH', KEYS[3], ARGV[4])
      return redis.call('GET', KEYS[4])
      """
          .getBytes(StandardCharsets.UTF_8);

  private final RedisLocalBus bus;
  private final String hostId;
  private final String frontendId;
  private final Clock clock;
  private final KafkaEntry kafka;
  private static final Supplier<CompletableFuture<Void>> DONE =
      () -> CompletableFuture.completedFuture(null);
  // the incarnation stamped when the host's agent has not written its own yet: an unknown host,
  // whose work the global bus replays only if it stays unfinished for a while
  private static final String NO_AGENT = "none";

  /**
   * @param hostId this host (the event's {@code host}; names the agent queue)
   * @param frontendId this frontend ({@code reply_to} of synchronous invocations)
   */
  Invoker(RedisLocalBus bus, String hostId, String frontendId, Clock clock, KafkaEntry kafka) {
    this.bus = bus;
    this.kafka = kafka;
    this.hostId = Names.requireHostId(hostId);
    this.frontendId = Names.requireHostId(frontendId);
    this.clock = clock;
  }

  /** A new execution id: a random UUID as 32 hex digits. */
  static String newId() {
    return UUID.randomUUID().toString().replace("-", "");
  }

  /**
   * Queues {@code invocation} and backs it up on the global bus (decision 0011). An asynchronous
   * invocation is queued only once the broker holds its backup (published here), so that 202 means
   * "will run, even if this host dies". A synchronous one is queued at once and its backup goes
   * with the host agent's other backups (batched, off the path); the returned supplier publishes it
   * from here when asked — for a caller about to be told 202 RUNNING after its timeout, which must
   * not be told so before the broker holds it.
   *
   * @throws dev.sand.bus.redis.LocalBusException when Redis refuses or is unreachable
   * @throws KafkaEntry.EntryException when an asynchronous invocation's backup, or an invocation
   *     through Kafka, is not acknowledged (nothing was queued)
   */
  Supplier<CompletableFuture<Void>> submit(Invocation invocation) {
    long now = clock.millis();
    EventMessage event = event(invocation, now);
    String topic = Topics.grain(invocation.app(), invocation.entryGrain());
    if (invocation.viaKafka()) {
      // the host agent that takes it from the topic writes the PROCESSING copy
      bus.set(Keys.result(invocation.executionId()), running(invocation, now), ResultDocument.TTL);
      kafka.publish(topic, invocation.executionId(), EventCodec.encode(event), null);
      return DONE;
    }
    EventMessage backup = event.deepCopy().setFlag(EventFlag.PROCESSING);
    if (!invocation.backups()) {
      // no copy for the agent either: nothing would ever mark it finished, and another run
      // of the agent would take it for lost work and run it again
      queue(invocation, event, null, now);
      return DONE;
    }
    byte[] record = EventCodec.encode(backup);
    if (invocation.sync()) {
      String incarnation = queue(invocation, event, backup, now);
      return () -> kafka.send(topic, invocation.executionId(), record, incarnation);
    }
    String incarnation =
        bus.get(Keys.incarnation())
            .map(b -> new String(b, StandardCharsets.UTF_8))
            .orElse(NO_AGENT);
    kafka.publish(topic, invocation.executionId(), record, incarnation);
    // the agent tracks the copy (a dead sandbox's work is replayed from it) without publishing it
    backup.putToHeaders(Topics.BACKED_UP_HEADER, "1");
    queue(invocation, event, backup, now);
    return DONE;
  }

  /**
   * Runs the script: status, agent copy (none when {@code copy} is null), event. Returns the
   * incarnation of the host agent of this local bus ({@link #NO_AGENT} when none wrote it).
   */
  private String queue(Invocation invocation, EventMessage event, EventMessage copy, long now) {
    byte[][] keys = {
      bytes(Keys.result(invocation.executionId())),
      bytes(Keys.agent(hostId)),
      bytes(Keys.grain(invocation.app(), invocation.entryGrain())),
      bytes(Keys.incarnation())
    };
    byte[][] values = {
      running(invocation, now),
      bytes(Long.toString(ResultDocument.TTL.toMillis())),
      copy == null ? new byte[0] : EventCodec.encode(copy),
      EventCodec.encode(event)
    };
    byte[] incarnation =
        bus.call(
            "EVAL (status, agent copy, INVOKE) for execution '" + invocation.executionId() + "'",
            c -> c.<byte[]>eval(SCRIPT, ScriptOutputType.VALUE, keys, values));
    return incarnation == null ? NO_AGENT : new String(incarnation, StandardCharsets.UTF_8);
  }

  /** The INVOKE event of {@code invocation}, made at {@code nowMs}. */
  EventMessage event(Invocation invocation, long nowMs) {
    return new EventMessage()
        .setKind(EventKind.INVOKE)
        .setFlag(EventFlag.QUEUED)
        .setExecution_id(invocation.executionId())
        .setEvent_id(newId())
        .setApp(invocation.app())
        .setWorkflow(invocation.workflow())
        .setTarget_grain(invocation.entryGrain())
        .setSource_grain("")
        .setPayload(invocation.input())
        .setToken("")
        .setCreated_ms(nowMs)
        .setDeadline_ms(0)
        .setAttempt(0)
        .setHost(hostId)
        .setReply_to(invocation.sync() ? frontendId : "")
        .setError("")
        .setCause("")
        .setHeaders(headers(invocation));
  }

  /**
   * The INVOKE event's headers: its name ({@code sand-name}) when it has one, and tracing headers
   * (sand_worker.trace) when the invocation asked for its timing.
   */
  private static Map<String, String> headers(Invocation invocation) {
    Map<String, String> headers = new HashMap<>(invocation.headers());
    if (invocation.trace()) {
      headers.put("trace", "[]");
      // epoch seconds with microseconds, the unit the grain instances use
      Instant now = Instant.now();
      headers.put(
          "t_frontend_in",
          String.format(Locale.ROOT, "%d.%06d", now.getEpochSecond(), now.getNano() / 1000));
    }
    return headers;
  }

  private static byte[] running(Invocation invocation, long nowMs) {
    return ResultDocument.running(
            invocation.executionId(), invocation.app(), invocation.workflow(), nowMs)
        .toBytes();
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
