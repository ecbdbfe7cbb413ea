package dev.sand.frontend;

import dev.sand.bus.EventCodec;
import dev.sand.bus.EventCodecException;
import dev.sand.bus.redis.LocalBusException;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.Keys;
import dev.sand.contracts.ResultDocument;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one thread of a frontend that takes RESULT/ERROR events from its reply queue ({@code
 * sand:reply:<frontend>}) and completes the matching {@link PendingReplies} entry.
 *
 * <p>Survives Redis outages: a failed take is logged, the taker connection is dropped and the loop
 * backs off (100 ms doubling to 2 s) before reconnecting. Events for executions nobody waits for
 * (the caller timed out, or another frontend restarted under this id) are logged and dropped; so is
 * anything that does not decode.
 */
final class ReplyDispatcher implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ReplyDispatcher.class);

  /** How long one BRPOP waits: bounds how long {@link #close} takes. */
  static final Duration TAKE_TIMEOUT = Duration.ofSeconds(1);

  private static final Duration MIN_BACKOFF = Duration.ofMillis(100);
  private static final Duration MAX_BACKOFF = Duration.ofSeconds(2);

  private final RedisLocalBus bus;
  private final String queue;
  private final PendingReplies pending;
  private final Thread thread;
  private volatile boolean running = true;

  private ReplyDispatcher(RedisLocalBus bus, String frontendId, PendingReplies pending) {
    this.bus = bus;
    this.queue = Keys.reply(frontendId);
    this.pending = pending;
    this.thread = new Thread(this::run, "replies-" + frontendId);
    thread.setDaemon(true);
  }

  /** Starts the dispatcher thread for the reply queue of {@code frontendId}. */
  static ReplyDispatcher start(RedisLocalBus bus, String frontendId, PendingReplies pending) {
    ReplyDispatcher dispatcher = new ReplyDispatcher(bus, frontendId, pending);
    dispatcher.thread.start();
    return dispatcher;
  }

  private void run() {
    Duration backoff = MIN_BACKOFF;
    RedisLocalBus.Taker taker = null;
    while (running) {
      try {
        if (taker == null) {
          taker = bus.taker();
        }
        Optional<byte[]> value = taker.take(queue, TAKE_TIMEOUT);
        backoff = MIN_BACKOFF;
        value.ifPresent(this::dispatch);
      } catch (LocalBusException e) {
        LOG.atWarn()
            .addKeyValue("queue", queue)
            .addKeyValue("retry_ms", backoff.toMillis())
            .addKeyValue("error", e.getMessage())
            .log("reply queue unreachable; retrying");
        if (taker != null) {
          closeQuietly(taker);
          taker = null;
        }
        sleep(backoff);
        backoff =
            backoff.multipliedBy(2).compareTo(MAX_BACKOFF) > 0
                ? MAX_BACKOFF
                : backoff.multipliedBy(2);
      } catch (RuntimeException e) {
        // a bug in dispatching one event must not stop every later reply
        LOG.atError()
            .addKeyValue("queue", queue)
            .addKeyValue("error", e.toString())
            .log("reply dispatch failed");
      }
    }
    if (taker != null) {
      closeQuietly(taker);
    }
  }

  private void dispatch(byte[] value) {
    EventMessage event;
    try {
      event = EventCodec.decode(value);
    } catch (EventCodecException e) {
      LOG.atWarn()
          .addKeyValue("queue", queue)
          .addKeyValue("error", e.getMessage())
          .log("undecodable reply dropped");
      return;
    }
    String id = event.getExecution_id();
    ResultDocument result = resultDocument(event);
    if (!pending.complete(id, result)) {
      LOG.atInfo()
          .addKeyValue("execution_id", id)
          .addKeyValue("kind", event.getKind())
          .log("reply for an execution nobody waits for dropped");
    }
  }

  /**
   * The result document of a RESULT/ERROR event: its payload, or, when the payload is missing or
   * not a result document, a FAILED document built from the event's error and cause.
   *
   * @throws IllegalArgumentException when the event's execution id is not one (nobody waits for it)
   */
  static ResultDocument resultDocument(EventMessage event) {
    byte[] payload = event.getPayload();
    if (payload != null && payload.length > 0) {
      try {
        return ResultDocument.parse(payload);
      } catch (IllegalArgumentException e) {
        // fall through: describe the broken reply instead of losing the caller's answer
      }
    }
    boolean named =
        event.getKind() == EventKind.ERROR
            && event.getError() != null
            && !event.getError().isEmpty();
    String error = named ? event.getError() : "Sand.InvalidResult";
    String cause =
        named
            ? event.getCause()
            : "the "
                + event.getKind()
                + " event of execution '"
                + event.getExecution_id()
                + "' carries no result document ("
                + (payload == null ? 0 : payload.length)
                + " payload bytes)";
    return ResultDocument.failed(
        event.getExecution_id(),
        event.getApp(),
        event.getWorkflow(),
        event.getCreated_ms(),
        error,
        cause);
  }

  private static void sleep(Duration duration) {
    try {
      Thread.sleep(duration.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void closeQuietly(RedisLocalBus.Taker taker) {
    try {
      taker.close();
    } catch (RuntimeException e) {
      LOG.atDebug().addKeyValue("error", e.toString()).log("closing the reply taker failed");
    }
  }

  /**
   * Stops the thread; blocks until it has left (at most about {@link #TAKE_TIMEOUT} plus the
   * longest back-off). Idempotent.
   */
  @Override
  public void close() {
    running = false;
    try {
      thread.join(TAKE_TIMEOUT.plus(MAX_BACKOFF).plusSeconds(1).toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
