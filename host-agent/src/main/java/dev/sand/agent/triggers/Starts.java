package dev.sand.agent.triggers;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sand.bus.EventCodec;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.config.KafkaConfig;
import dev.sand.contracts.Topics;
import dev.sand.contracts.contractsConstants;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Starts the executions of triggers: an INVOKE event flagged QUEUED on the entry grain's topic (the
 * paper's external path, as {@code POST /invoke?via=kafka} does), which the host agent that owns
 * the partition puts on its local bus. The event carries the trigger ({@code sand-trigger}) and,
 * for a schedule, the execution's name ({@code sand-name}). Thread-safe.
 */
final class Starts implements AutoCloseable {
  /**
   * How long a publish may take, retries included: a claim older than this plus a margin was never
   * published by its agent (see {@link ScheduleRunner#TAKE_OVER_AFTER_MS}).
   */
  static final int DELIVERY_TIMEOUT_MS = 15_000;

  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** Where the events go: a producer, or a test's stand-in. */
  interface Publisher extends AutoCloseable {
    /** Publishes {@code event} under {@code key}; completes once the broker holds it. */
    CompletableFuture<Void> publish(String topic, String key, byte[] event);

    @Override
    void close();
  }

  private final String hostId;
  private final Publisher publisher;

  Starts(String hostId, Publisher publisher) {
    this.hostId = hostId;
    this.publisher = publisher;
  }

  /**
   * A publisher through a producer of its own (acks from all replicas, idempotent), made at the
   * first publish: an agent whose apps have no triggers runs no producer for them.
   */
  static Publisher kafka(KafkaConfig config, String clientId) {
    Properties props = config.producerBase(clientId);
    props.put(ProducerConfig.LINGER_MS_CONFIG, 0);
    props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000);
    props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, DELIVERY_TIMEOUT_MS);
    props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 5_000);
    return new Publisher() {
      private Producer<String, byte[]> producer;
      private boolean closed;

      private synchronized Producer<String, byte[]> producer() {
        if (closed) {
          throw new KafkaException("the triggers' producer is closed");
        }
        if (producer == null) {
          producer = new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer());
        }
        return producer;
      }

      @Override
      public CompletableFuture<Void> publish(String topic, String key, byte[] event) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        try {
          producer()
              .send(
                  new ProducerRecord<>(topic, key, event),
                  (metadata, error) -> {
                    if (error == null) {
                      done.complete(null);
                    } else {
                      done.completeExceptionally(error);
                    }
                  });
        } catch (KafkaException e) {
          done.completeExceptionally(e);
        }
        return done;
      }

      @Override
      public synchronized void close() {
        closed = true;
        if (producer != null) {
          producer.close(java.time.Duration.ofSeconds(1));
        }
      }
    };
  }

  /**
   * Starts execution {@code executionId} of {@code def} with {@code input}.
   *
   * @param eventId the INVOKE event's id: the same for every publish of one firing, so that a
   *     partition's owner delivers it once even if a taken-over firing is published twice
   * @param name the execution's name, or null
   * @param trigger what {@code sand-trigger} says (name, kind, and the firing or the record)
   */
  CompletableFuture<Void> start(
      TriggerDef def,
      String executionId,
      String eventId,
      String name,
      byte[] input,
      Map<String, Object> trigger,
      long nowMs) {
    Map<String, String> headers = new HashMap<>();
    try {
      headers.put(contractsConstants.HEADER_TRIGGER, MAPPER.writeValueAsString(trigger));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalArgumentException("trigger header: " + e.getMessage(), e);
    }
    if (name != null) {
      headers.put(contractsConstants.HEADER_NAME, name);
    }
    EventMessage event =
        new EventMessage()
            .setKind(EventKind.INVOKE)
            .setFlag(EventFlag.QUEUED)
            .setExecution_id(executionId)
            .setEvent_id(eventId)
            .setApp(def.app())
            .setWorkflow(def.workflow())
            .setTarget_grain(def.entryGrain())
            .setSource_grain("")
            .setPayload(input)
            .setToken("")
            .setCreated_ms(nowMs)
            .setDeadline_ms(0)
            .setAttempt(0)
            .setHost(hostId)
            .setReply_to("")
            .setError("")
            .setCause("")
            .setHeaders(headers);
    return publisher.publish(
        Topics.grain(def.app(), def.entryGrain()), executionId, EventCodec.encode(event));
  }

  /** A new id: a random UUID as 32 hex digits (the frontends' form). */
  static String newId() {
    return UUID.randomUUID().toString().replace("-", "");
  }

  /** The id every publish of {@code parts} shares: a name-based UUID as 32 hex digits. */
  static String idOf(String... parts) {
    return UUID.nameUUIDFromBytes(String.join("\n", parts).getBytes(StandardCharsets.UTF_8))
        .toString()
        .replace("-", "");
  }

  /** {@code input} as compact JSON bytes. */
  static byte[] json(JsonNode input) {
    try {
      return MAPPER.writeValueAsBytes(input);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    }
  }

  @Override
  public void close() {
    publisher.close();
  }
}
