package dev.sand.frontend;

import dev.sand.bus.EventCodec;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.Keys;
import dev.sand.contracts.Names;
import dev.sand.contracts.ResultDocument;
import dev.sand.contracts.Topics;
import dev.sand.contracts.contractsConstants;
import io.lettuce.core.ScriptOutputType;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Puts invocations on the local bus (decision 0004): the RUNNING status document, the host agent's
 * copy (flag PROCESSING) and the INVOKE event on the entry grain's queue, in that order; and their
 * backup on the global bus (decision 0011).
 *
 * <p>The three writes run as one Lua script, so they are atomic and ordered: no worker can take the
 * event before its backup and status exist, and a failed call leaves nothing half-written. The same
 * script counts the app's queued events first and writes nothing when the host is at its bound
 * (admission control, decision 0023). Thread-safe; {@link #admit} and {@link #submit} block on one
 * Redis round trip (two for an invocation backed up before it is queued, and the broker's ack).
 */
final class Invoker {
  // KEYS: status, agent queue, entry queue, incarnation, then per grain admission counts: its
  // queue, its worker's readiness key, its metrics hash (Admission.Quota); ARGV: status
  // document, its TTL (ms), agent copy ('' = none), event, limit (-1 = no check), the metric's
  // field name (contracts.thrift METRIC_IN_FLIGHT). Writes
  // nothing when the grains' queued and running events are `limit` or more (decision 0023).
  // in_flight is written by the app's own processes: a number or nothing, never trusted further.
  private static final byte[] SCRIPT =
      """
      local queued = 0
      for i = 5, #KEYS, 3 do
        queued = queued + redis.call('LLEN', KEYS[i])
        if redis.call('EXISTS', KEYS[i + 1]) == 1 then
          local running = tonumber(redis.call('HGET', KEYS[i + 2], ARGV[6])) or 0
          if running > 0 then queued = queued + math.min(running, 1000000) end
        end
      end
      local limit = tonumber(ARGV[5])
      if limit >= 0 and queued >= limit then return {0, queued} end
      redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
      if ARGV[3] ~= '' then redis.call('LPUSH', KEYS[2], ARGV[3]) end
      redis.call('LPUSH', KEYS[3], ARGV[4])
      return {1, queued, redis.call('GET', KEYS[4])}
      """
          .getBytes(StandardCharsets.UTF_8);

  // KEYS: incarnation, then the keys admission counts (as above). What an invocation that must be
  // backed up before it is queued (async, or through Kafka) reads first, in place of a plain GET.
  // ARGV: the metric's field name.
  private static final byte[] PROBE =
      """
      local queued = 0
      for i = 2, #KEYS, 3 do
        queued = queued + redis.call('LLEN', KEYS[i])
        if redis.call('EXISTS', KEYS[i + 1]) == 1 then
          local running = tonumber(redis.call('HGET', KEYS[i + 2], ARGV[1])) or 0
          if running > 0 then queued = queued + math.min(running, 1000000) end
        end
      end
      return {queued, redis.call('GET', KEYS[1])}
      """
          .getBytes(StandardCharsets.UTF_8);

  private static final byte[] IN_FLIGHT = bytes(contractsConstants.METRIC_IN_FLIGHT);

  private static final Admission.Quota UNCHECKED = new Admission.Quota(new byte[0][], -1);

  private final RedisLocalBus bus;
  private final String hostId;
  private final String frontendId;
  private final Clock clock;
  private final KafkaEntry kafka;
  private final Admission.HostBacklog backlog;
  private final Executor afterAck;
  private static final Supplier<CompletableFuture<Void>> DONE =
      () -> CompletableFuture.completedFuture(null);
  // the incarnation stamped when the host's agent has not written its own yet: an unknown host,
  // whose work the global bus replays only if it stays unfinished for a while
  private static final String NO_AGENT = "none";

  /**
   * @param hostId this host (the event's {@code host}; names the agent queue)
   * @param frontendId this frontend ({@code reply_to} of synchronous invocations)
   * @param backlog what this frontend saw of the host's queues (admission control, decision 0023)
   * @param afterAck where an asynchronous invocation is queued once the broker acknowledged its
   *     backup (never the producer's own thread, which must not wait on Redis)
   */
  Invoker(
      RedisLocalBus bus,
      String hostId,
      String frontendId,
      Clock clock,
      KafkaEntry kafka,
      Admission.HostBacklog backlog,
      Executor afterAck) {
    this.bus = bus;
    this.backlog = backlog;
    this.afterAck = afterAck;
    this.kafka = kafka;
    this.hostId = Names.requireHostId(hostId);
    this.frontendId = Names.requireHostId(frontendId);
    this.clock = clock;
  }

  /**
   * An admitted invocation.
   *
   * @param queued completes once the INVOKE event is on the local bus (at once for a synchronous
   *     invocation; for an asynchronous one, after its backup was acknowledged), exceptionally with
   *     the {@link dev.sand.bus.redis.LocalBusException} or {@link KafkaEntry.EntryException} that
   *     kept it off (then nothing was queued)
   * @param backup publishes a synchronous invocation's backup when asked (see {@link #admit})
   * @param answered to be told when a synchronous invocation was answered: {@code true} with its
   *     result, {@code false} when its wait ran out (its latency is the app's adaptive bound's
   *     sample, decision 0032); a no-op for the others
   */
  record Submitted(
      CompletableFuture<Void> queued,
      Supplier<CompletableFuture<Void>> backup,
      Consumer<Boolean> answered) {
    Submitted(CompletableFuture<Void> queued, Supplier<CompletableFuture<Void>> backup) {
      this(queued, backup, inTime -> {});
    }
  }

  /** A new execution id: a random UUID as 32 hex digits. */
  static String newId() {
    return UUID.randomUUID().toString().replace("-", "");
  }

  /**
   * Queues {@code invocation} unless its app's queues on this host are at their bound (admission
   * control, decision 0023), and backs it up on the global bus (decision 0011). {@code grains} are
   * the app's grains on this host, whose queues are counted in the round trip that queues it (or,
   * for an invocation backed up before it is queued, the one that reads the agent's incarnation).
   *
   * <p>An asynchronous invocation is queued only once the broker holds its backup (published here),
   * so that 202 means "will run, even if this host dies"; it is checked before the backup, so a
   * refused one leaves nothing behind and an accepted one is never dropped. A synchronous one is
   * queued at once and its backup goes with the host agent's other backups (batched, off the path);
   * the returned supplier publishes it from here when asked — for a caller about to be told 202
   * RUNNING after its timeout, which must not be told so before the broker holds it.
   *
   * @throws Admission.Busy when the host is at a bound: nothing was written or published
   * @throws dev.sand.bus.redis.LocalBusException when Redis refuses or is unreachable
   * @throws KafkaEntry.EntryException when an asynchronous invocation's backup, or an invocation
   *     through Kafka, is not acknowledged (nothing was queued)
   */
  Submitted admit(Invocation invocation, Set<String> grains) throws Admission.Busy {
    return submit(invocation, backlog.quota(invocation.app(), grains));
  }

  /**
   * As {@link #admit}, without a bound: what a redrive queues (an execution accepted before, run
   * again by its owner's explicit request).
   */
  Submitted submit(Invocation invocation) {
    try {
      return submit(invocation, UNCHECKED);
    } catch (Admission.Busy e) {
      throw new IllegalStateException("an unchecked invocation was refused", e);
    }
  }

  private Submitted submit(Invocation invocation, Admission.Quota quota) throws Admission.Busy {
    long now = clock.millis();
    EventMessage event = event(invocation, now);
    String topic = Topics.grain(invocation.app(), invocation.entryGrain());
    if (invocation.viaKafka()) {
      probe(invocation, quota);
      // the host agent that takes it from the topic writes the PROCESSING copy
      bus.set(Keys.result(invocation.executionId()), running(invocation, now), ResultDocument.TTL);
      kafka.publish(topic, invocation.executionId(), EventCodec.encode(event), null);
      return new Submitted(CompletableFuture.completedFuture(null), DONE);
    }
    EventMessage backup = event.deepCopy().setFlag(EventFlag.PROCESSING);
    if (!invocation.backups()) {
      // no copy for the agent either: nothing would ever mark it finished, and another run
      // of the agent would take it for lost work and run it again
      queue(invocation, event, null, now, quota);
      return new Submitted(CompletableFuture.completedFuture(null), DONE);
    }
    byte[] record = EventCodec.encode(backup);
    if (invocation.sync()) {
      long started = backlog.now();
      String incarnation = queue(invocation, event, backup, now, quota);
      return new Submitted(
          CompletableFuture.completedFuture(null),
          () -> kafka.send(topic, invocation.executionId(), record, incarnation),
          quota == UNCHECKED
              ? inTime -> {}
              : inTime -> backlog.answered(invocation.app(), started, inTime));
    }
    String incarnation = probe(invocation, quota);
    // the agent tracks the copy (a dead sandbox's work is replayed from it) without publishing it
    backup.putToHeaders(Topics.BACKED_UP_HEADER, "1");
    // no thread waits for the broker: admitted by the probe, counted as pending until queued
    // (whatever the queues hold then), or until the broker refused it
    backlog.pending(invocation.app(), 1);
    CompletableFuture<Void> acked;
    try {
      acked = kafka.send(topic, invocation.executionId(), record, incarnation);
    } catch (RuntimeException e) {
      backlog.pending(invocation.app(), -1);
      throw e;
    }
    CompletableFuture<Void> queued =
        acked
            .orTimeout(KafkaEntry.ACK_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
            .thenRunAsync(() -> queueAdmitted(invocation, event, backup, now), afterAck);
    queued.whenComplete((ok, error) -> backlog.pending(invocation.app(), -1));
    return new Submitted(queued, DONE);
  }

  private void queueAdmitted(
      Invocation invocation, EventMessage event, EventMessage copy, long now) {
    try {
      queue(invocation, event, copy, now, UNCHECKED);
    } catch (Admission.Busy e) {
      throw new IllegalStateException("an unchecked invocation was refused", e);
    }
  }

  /**
   * Counts the queues of {@code quota} and reads the incarnation of this host's agent ({@link
   * #NO_AGENT} when none wrote it), in one round trip.
   *
   * @throws Admission.Busy when the queues hold {@code quota.limit()} events or more
   */
  private String probe(Invocation invocation, Admission.Quota quota) throws Admission.Busy {
    byte[][] keys = new byte[quota.queues().length + 1][];
    keys[0] = bytes(Keys.incarnation());
    System.arraycopy(quota.queues(), 0, keys, 1, quota.queues().length);
    List<Object> reply =
        bus.call(
            "EVAL (queue lengths, incarnation) for execution '" + invocation.executionId() + "'",
            c -> c.<List<Object>>eval(PROBE, ScriptOutputType.MULTI, keys, IN_FLIGHT));
    // asynchronous invocations this frontend admitted and has not queued yet count too
    long queued = (Long) reply.get(0) + backlog.pending(invocation.app());
    admitted(invocation, quota, queued);
    return text(reply.size() > 1 ? reply.get(1) : null);
  }

  /** Records what a call saw of the app's queues; throws when it was at the quota. */
  private void admitted(Invocation invocation, Admission.Quota quota, long queued)
      throws Admission.Busy {
    if (quota.limit() >= 0 && queued >= quota.limit()) {
      throw backlog.busy(invocation.app(), quota, queued);
    }
    if (quota.limit() >= 0) {
      backlog.saw(invocation.app(), queued + 1);
    }
  }

  /**
   * Runs the script: status, agent copy (none when {@code copy} is null), event — unless the queues
   * of {@code quota} are at its limit. Returns the incarnation of the host agent of this local bus
   * ({@link #NO_AGENT} when none wrote it).
   *
   * @throws Admission.Busy when the queues hold {@code quota.limit()} events or more (nothing
   *     written)
   */
  private String queue(
      Invocation invocation, EventMessage event, EventMessage copy, long now, Admission.Quota quota)
      throws Admission.Busy {
    byte[][] keys = new byte[4 + quota.queues().length][];
    keys[0] = bytes(Keys.result(invocation.executionId()));
    keys[1] = bytes(Keys.agent(hostId));
    keys[2] = bytes(Keys.grain(invocation.app(), invocation.entryGrain()));
    keys[3] = bytes(Keys.incarnation());
    System.arraycopy(quota.queues(), 0, keys, 4, quota.queues().length);
    byte[][] values = {
      running(invocation, now),
      bytes(Long.toString(ResultDocument.TTL.toMillis())),
      copy == null ? new byte[0] : EventCodec.encode(copy),
      EventCodec.encode(event),
      bytes(Long.toString(quota.limit())),
      IN_FLIGHT
    };
    List<Object> reply =
        bus.call(
            "EVAL (status, agent copy, INVOKE) for execution '" + invocation.executionId() + "'",
            c -> c.<List<Object>>eval(SCRIPT, ScriptOutputType.MULTI, keys, values));
    admitted(invocation, quota, (Long) reply.get(1));
    return text(reply.size() > 2 ? reply.get(2) : null);
  }

  private static String text(Object incarnation) {
    return incarnation instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : NO_AGENT;
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
   * The INVOKE event's headers: its name ({@code sand-name}) when it has one, and the tracing
   * headers (contracts.thrift, read by sand_worker.trace) when the invocation asked for its timing.
   */
  private static Map<String, String> headers(Invocation invocation) {
    Map<String, String> headers = new HashMap<>(invocation.headers());
    if (invocation.trace()) {
      headers.put(contractsConstants.HEADER_TRACE, "[]");
      // epoch seconds with microseconds, the unit the grain instances use
      Instant now = Instant.now();
      headers.put(
          contractsConstants.HEADER_FRONTEND_IN,
          String.format(Locale.ROOT, "%d.%06d", now.getEpochSecond(), now.getNano() / 1000));
    }
    return headers;
  }

  /**
   * The RUNNING document of {@code invocation}. A redrive is a later run of an execution: its
   * document keeps the execution's start and name and says which run it is, as the record does.
   */
  private static byte[] running(Invocation invocation, long nowMs) {
    Map<String, String> headers = invocation.headers();
    String started = headers.get(contractsConstants.HEADER_STARTED_MS);
    String redrives = headers.get(contractsConstants.HEADER_REDRIVE_COUNT);
    return new ResultDocument(
            invocation.executionId(),
            invocation.app(),
            invocation.workflow(),
            ExecutionStatus.RUNNING,
            started == null ? nowMs : Long.parseLong(started),
            0,
            null,
            null,
            null,
            null,
            null,
            invocation.name(),
            redrives == null ? 0 : Integer.parseInt(redrives))
        .toBytes();
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
