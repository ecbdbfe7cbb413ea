package dev.sand.frontend;

import dev.sand.config.KafkaConfig;
import java.time.Duration;
import java.util.Properties;
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
 * The invocation entry through the global bus (the paper's external path): the INVOKE event is
 * published to the entry grain's topic and the host agent that owns the partition puts it on its
 * local bus. Opened on first use, so a frontend that only uses the local entry never connects to
 * Kafka. Thread-safe.
 */
final class KafkaEntry implements AutoCloseable {
  /** A publish the broker did not acknowledge. */
  static final class EntryException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    EntryException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private static final Duration ACK_TIMEOUT = Duration.ofSeconds(10);

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
   * @throws EntryException naming the topic when the broker does not acknowledge in 10 s
   */
  void publish(String topic, String key, byte[] event) {
    try {
      producer()
          .send(new ProducerRecord<>(topic, key, event))
          .get(ACK_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw new EntryException(
          "kafka at " + config.bootstrapServers() + ": publish to " + topic + ": " + e.getCause(),
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
    } catch (KafkaException e) {
      throw new EntryException("kafka at " + config.bootstrapServers() + ": " + e.getMessage(), e);
    }
  }

  private synchronized KafkaProducer<String, byte[]> producer() {
    if (producer == null) {
      Properties props = new Properties();
      props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrapServers());
      props.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
      props.put(ProducerConfig.ACKS_CONFIG, "all");
      props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
      props.put(ProducerConfig.LINGER_MS_CONFIG, 0);
      props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) ACK_TIMEOUT.toMillis());
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
