package dev.sand.config;

import java.util.List;
import java.util.Properties;

/**
 * The global bus.
 *
 * @param bootstrap broker endpoints ({@code kafka.bootstrap}, written {@code
 *     host:port[,host:port]})
 */
public record KafkaConfig(List<HostPort> bootstrap) {
  public KafkaConfig {
    if (bootstrap == null || bootstrap.isEmpty()) {
      throw ConfigException.invalid("bootstrap", "must name at least one host:port");
    }
    bootstrap = List.copyOf(bootstrap);
  }

  /** Parses {@code host:port[,host:port...]}. */
  static KafkaConfig parse(String bootstrap) {
    List<HostPort> servers =
        java.util.Arrays.stream(bootstrap.split(","))
            .map(String::trim)
            .map(server -> HostPort.parse("bootstrap", server))
            .toList();
    return new KafkaConfig(servers);
  }

  /**
   * The settings every producer of SAND starts from (the frontends' entry and backups, the agents'
   * backups and trigger starts): this cluster, {@code clientId}, acknowledged by all in-sync
   * replicas, idempotent — and one request in flight per broker.
   *
   * <p>One in flight because of KAFKA-15591 (fixed in Kafka 4.5; SAND runs 4.1): with several, a
   * producer's first request to a partition whose broker has not yet applied it (a topic just
   * created by a deploy; a leader that just moved, for a producer the new leader has no state of)
   * fails with NOT_LEADER_OR_FOLLOWER while the next request is appended; every retry of the first
   * then fails with OUT_OF_ORDER_SEQUENCE_NUMBER until its delivery timeout drops it. CI met it:
   * the backups of a conformance run's first invocations on a freshly deployed app were never
   * acknowledged (decision 0043). With one in flight the producer retries the first request before
   * it sends another. Keys are Kafka's property names: this module does not depend on
   * kafka-clients.
   */
  public Properties producerBase(String clientId) {
    Properties props = new Properties();
    props.put("bootstrap.servers", bootstrapServers());
    props.put("client.id", clientId);
    props.put("acks", "all");
    props.put("enable.idempotence", "true");
    props.put("max.in.flight.requests.per.connection", "1");
    return props;
  }

  /** The value of Kafka's {@code bootstrap.servers} property. */
  public String bootstrapServers() {
    return String.join(",", bootstrap.stream().map(HostPort::toString).toList());
  }
}
