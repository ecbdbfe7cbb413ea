package dev.sand.bridge.kafka;

import dev.sand.config.KafkaConfig;
import dev.sand.contracts.Topics;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The host agent's side of the global bus (Kafka): topic administration, liveness and the producer
 * of backups and flags. The consumer side is {@code dev.sand.agent.bus.GlobalBus}.
 *
 * <p>Thread-safe (Kafka's admin client is). Calls block up to the request timeout given at {@link
 * #connect} and throw {@link BridgeException} naming the brokers.
 */
public final class KafkaBridge implements AutoCloseable {
  private final KafkaConfig config;
  private final Admin admin;
  private final Producer<String, byte[]> producer;
  private final Duration timeout;

  private KafkaBridge(
      KafkaConfig config, Admin admin, Producer<String, byte[]> producer, Duration timeout) {
    this.config = config;
    this.admin = admin;
    this.producer = producer;
    this.timeout = timeout;
  }

  /**
   * Creates the admin client. Does not block: Kafka connects lazily, so the first call reports an
   * unreachable cluster.
   *
   * @param clientId names this agent in broker logs
   * @param timeout bound of every call
   */
  public static KafkaBridge connect(KafkaConfig config, String clientId, Duration timeout) {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrapServers());
    props.put(AdminClientConfig.CLIENT_ID_CONFIG, clientId);
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
    // a broker that restarts should be found again quickly, not after the 1 s default backoff cap
    props.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 500);
    // backups are the recovery log: acks from all replicas, idempotent, in order per key
    Properties producerProps = config.producerBase(clientId + "-backup");
    // Backups are off the grain path, so latency does not matter but CPU does: on a small
    // host every send competes with grain instances. The agent hands its records over in
    // bursts, one per 20 ms window (FlagGate); 5 ms is enough to put a burst in one request.
    producerProps.put(ProducerConfig.LINGER_MS_CONFIG, 5);
    producerProps.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "none");
    producerProps.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) timeout.toMillis());
    producerProps.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 500);
    try {
      return new KafkaBridge(
          config,
          Admin.create(props),
          new KafkaProducer<>(producerProps, new StringSerializer(), new ByteArraySerializer()),
          timeout);
    } catch (KafkaException e) {
      throw new BridgeException("kafka at " + config.bootstrapServers() + ": " + e.getMessage(), e);
    }
  }

  /**
   * Creates {@code topics} that do not exist yet, with the brokers' default partitions and
   * replication. Blocking.
   *
   * @throws BridgeException naming the topic when the cluster refuses or does not answer
   */
  public void ensureTopics(Collection<String> topics) {
    List<NewTopic> wanted =
        topics.stream().map(t -> new NewTopic(t, Optional.empty(), Optional.empty())).toList();
    var results = admin.createTopics(wanted).values();
    for (var entry : results.entrySet()) {
      try {
        entry.getValue().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof TopicExistsException)) {
          throw failure("create topic " + entry.getKey(), e.getCause());
        }
      } catch (TimeoutException e) {
        throw failure("create topic " + entry.getKey(), e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw failure("create topic " + entry.getKey(), e);
      }
    }
  }

  /**
   * Checks that the cluster answers; returns a description such as {@code 1 broker(s), cluster
   * abc}. Blocking.
   *
   * @throws BridgeException when no broker answers in time
   */
  public String ping() {
    DescribeClusterResult cluster = admin.describeCluster();
    try {
      Collection<Node> nodes = cluster.nodes().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      String id = cluster.clusterId().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      return nodes.size() + " broker(s), cluster " + id;
    } catch (ExecutionException e) {
      throw failure("describe cluster", e.getCause());
    } catch (TimeoutException e) {
      throw failure("describe cluster", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw failure("describe cluster", e);
    }
  }

  /**
   * Publishes {@code value} to {@code topic} under {@code key} without waiting, with the header
   * {@link Topics#INCARNATION_HEADER} = {@code incarnation}; {@code onDone} is called (on the
   * producer's thread) with null once the broker took it, or with the error. Never blocks longer
   * than the bridge's timeout, even when the broker is away.
   */
  public void publish(
      String topic,
      String key,
      byte[] value,
      String incarnation,
      java.util.function.Consumer<Exception> onDone) {
    publish(topic, key, value, incarnation, java.util.Map.of(), onDone);
  }

  /**
   * As {@link #publish(String, String, byte[], String, java.util.function.Consumer)}, with {@code
   * headers} added to the record.
   */
  public void publish(
      String topic,
      String key,
      byte[] value,
      String incarnation,
      java.util.Map<String, byte[]> headers,
      java.util.function.Consumer<Exception> onDone) {
    ProducerRecord<String, byte[]> record = new ProducerRecord<>(topic, key, value);
    record.headers().add(Topics.INCARNATION_HEADER, incarnation.getBytes(StandardCharsets.UTF_8));
    headers.forEach((name, bytes) -> record.headers().add(name, bytes));
    try {
      producer.send(record, (metadata, error) -> onDone.accept(error));
    } catch (KafkaException e) {
      onDone.accept(e);
    }
  }

  /** The admin client, for consumer-group descriptions (which hosts are alive). */
  public Admin admin() {
    return admin;
  }

  /** Closes the clients, waiting up to a second each for in-flight calls and sends. */
  @Override
  public void close() {
    producer.close(Duration.ofSeconds(1));
    admin.close(Duration.ofSeconds(1));
  }

  private BridgeException failure(String action, Throwable cause) {
    String why =
        cause instanceof TimeoutException
            ? "no answer within " + timeout.toMillis() + " ms"
            : String.valueOf(cause.getMessage());
    return new BridgeException(
        "kafka at " + config.bootstrapServers() + ": " + action + ": " + why, cause);
  }
}
