package dev.sand.agent.bus;

import dev.sand.bridge.kafka.KafkaBridge;
import dev.sand.contracts.Topics;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes HISTORY messages to {@code sand.history} (key: their execution) from a thread of its
 * own: no flag waits for them, none is sent again, and a producer that blocks (a broker away) holds
 * up no backup. History is a record for people; the bus must not wait for it. Thread-safe.
 */
final class HistoryPublisher implements AutoCloseable {
  // the loops' name: the log lines they wrote before this class existed keep their logger
  private static final Logger LOG = LoggerFactory.getLogger(EventLoops.class);
  // messages waiting for the producer; beyond this many (a broker away for long) new ones are
  // dropped and counted
  private static final int QUEUE = 10_000;

  private final Supplier<KafkaBridge> kafka;
  private final String incarnation;
  private final AtomicLong published = new AtomicLong();
  private final AtomicLong errors = new AtomicLong();
  private final ThreadPoolExecutor thread =
      new ThreadPoolExecutor(
          1,
          1,
          0,
          TimeUnit.MILLISECONDS,
          new ArrayBlockingQueue<>(QUEUE),
          r -> {
            Thread t = new Thread(r, "history-publisher");
            t.setDaemon(true);
            return t;
          },
          (task, pool) -> errors.incrementAndGet());

  /**
   * @param incarnation this run of the agent: the header of every record it publishes
   */
  HistoryPublisher(Supplier<KafkaBridge> kafka, String incarnation) {
    this.kafka = kafka;
    this.incarnation = incarnation;
  }

  /**
   * Queues {@code raw} for publishing; returns at once. Dropped and counted when the queue is full
   * or Kafka is not connected.
   */
  void publish(String executionId, byte[] raw) {
    thread.execute(
        () -> {
          KafkaBridge bridge = kafka.get();
          if (bridge == null) {
            errors.incrementAndGet();
            return;
          }
          bridge.publish(
              Topics.HISTORY,
              executionId,
              raw,
              incarnation,
              error -> {
                if (error == null) {
                  published.incrementAndGet();
                } else if (errors.incrementAndGet() % 100 == 1) {
                  LOG.atWarn()
                      .addKeyValue("execution_id", executionId)
                      .addKeyValue("error", error.toString())
                      .log("history message not published to kafka; dropped");
                }
              });
        });
  }

  /** Messages the broker acknowledged. */
  long published() {
    return published.get();
  }

  /** Messages dropped: queue full, Kafka away, or refused by the broker. */
  long errors() {
    return errors.get();
  }

  /** Stops taking messages; those queued are still sent. Returns at once. */
  @Override
  public void close() {
    thread.shutdown();
  }
}
