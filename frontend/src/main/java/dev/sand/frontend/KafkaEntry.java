package dev.sand.frontend;

import dev.sand.config.KafkaConfig;
import dev.sand.contracts.Topics;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The frontend's producer on the global bus: the backup of every INVOKE event (flag PROCESSING, on
 * the entry grain's topic, decision 0011), and the entry through the global bus (the paper's
 * external path: the INVOKE event flagged QUEUED, which the host agent that owns the partition puts
 * on its local bus). Opened by {@link #open} when the frontend starts, so the producer's start-up
 * (its classes, the cluster's metadata, an idempotent producer id) is not paid by the first
 * invocation. Thread-safe.
 */
final class KafkaEntry implements AutoCloseable {
  /** A publish the broker did not acknowledge. */
  static final class EntryException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    EntryException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * How long a publish waits for the broker's acknowledgement before the invocation is refused
   * (503). The producer gives the record up at the same moment (its delivery timeout), so a refused
   * invocation is not retried behind the caller's back; 30 s is Kafka's default request timeout: a
   * broker restarted under load is back within it (calls wait for it instead of being refused) and
   * it is short of any client's patience (decision 0043).
   */
  static final Duration ACK_TIMEOUT = Duration.ofSeconds(30);

  /** How long a publish may block its caller's thread while the topic's metadata is fetched. */
  private static final Duration METADATA_WAIT = Duration.ofSeconds(10);

  private final KafkaConfig config;
  private final String clientId;
  private KafkaProducer<String, byte[]> producer;

  KafkaEntry(KafkaConfig config, String clientId) {
    this.config = config;
    this.clientId = clientId;
  }

  /**
   * Publishes {@code event} to {@code topic} under {@code key} and waits for the broker's
   * acknowledgement (all in-sync replicas): an accepted invocation is durable before the caller is
   * told so.
   *
   * @param incarnation the incarnation header (the host agent that will process it), or null
   * @throws EntryException naming the topic when the broker does not acknowledge in {@link
   *     #ACK_TIMEOUT}
   */
  void publish(String topic, String key, byte[] event, String incarnation) {
    try {
      send(topic, key, event, incarnation).get(ACK_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof EntryException entry
          ? entry
          : new EntryException(
              "kafka at "
                  + config.bootstrapServers()
                  + ": publish to "
                  + topic
                  + ": "
                  + e.getCause(),
              e);
    } catch (TimeoutException e) {
      throw new EntryException(
          "kafka at "
              + config.bootstrapServers()
              + ": no acknowledgement for "
              + topic
              + " in "
              + ACK_TIMEOUT.toSeconds()
              + " s",
          e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new EntryException("interrupted while publishing to " + topic, e);
    }
  }

  /**
   * Publishes without waiting: the future completes when the broker acknowledged (exceptionally
   * with an {@link EntryException} when it did not).
   */
  CompletableFuture<Void> send(String topic, String key, byte[] event, String incarnation) {
    ProducerRecord<String, byte[]> record = new ProducerRecord<>(topic, key, event);
    if (incarnation != null) {
      record.headers().add(Topics.INCARNATION_HEADER, incarnation.getBytes(StandardCharsets.UTF_8));
    }
    CompletableFuture<Void> acked = new CompletableFuture<>();
    try {
      producer()
          .send(
              record,
              (metadata, error) -> {
                if (error == null) {
                  acked.complete(null);
                } else {
                  acked.completeExceptionally(
                      new EntryException(
                          "kafka at "
                              + config.bootstrapServers()
                              + ": publish to "
                              + topic
                              + ": "
                              + error,
                          error));
                }
              });
    } catch (KafkaException e) {
      acked.completeExceptionally(
          new EntryException("kafka at " + config.bootstrapServers() + ": " + e.getMessage(), e));
    }
    return acked;
  }

  /**
   * Starts the producer without waiting for the broker: it connects, reads the cluster's metadata
   * and asks for its producer id in the background.
   */
  void open() {
    producer();
  }

  private synchronized KafkaProducer<String, byte[]> producer() {
    if (producer == null) {
      Properties props = config.producerBase(clientId);
      props.put(ProducerConfig.LINGER_MS_CONFIG, 0);
      props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) METADATA_WAIT.toMillis());
      // the producer gives a record up when the caller stops waiting for it (Kafka requires
      // delivery >= linger + request; linger is 0)
      props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) ACK_TIMEOUT.toMillis());
      props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) ACK_TIMEOUT.toMillis());
      producer = new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer());
    }
    return producer;
  }

  @Override
  public synchronized void close() {
    if (producer != null) {
      producer.close(Duration.ofSeconds(2));
      producer = null;
    }
  }
}
