package dev.sand.config;

import java.util.List;

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

  /** The value of Kafka's {@code bootstrap.servers} property. */
  public String bootstrapServers() {
    return String.join(",", bootstrap.stream().map(HostPort::toString).toList());
  }
}
