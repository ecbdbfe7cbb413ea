package dev.sand.bridge.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.config.HostPort;
import dev.sand.config.KafkaConfig;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/**
 * Kafka reads the shared producer settings as SAND means them (a misspelt key would be ignored).
 */
class ProducerBaseTest {
  @Test
  void producerBase_readByKafka_allReplicasIdempotentOneRequestInFlight() {
    KafkaConfig kafka =
        new KafkaConfig(List.of(new HostPort("10.0.0.1", 9092), new HostPort("10.0.0.2", 9092)));
    Properties props = kafka.producerBase("sand-test");
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);

    ProducerConfig read = new ProducerConfig(props);

    assertThat(read.getList(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG))
        .containsExactly("10.0.0.1:9092", "10.0.0.2:9092");
    assertThat(read.getString(ProducerConfig.CLIENT_ID_CONFIG)).isEqualTo("sand-test");
    assertThat(read.getString(ProducerConfig.ACKS_CONFIG)).isEqualTo("-1");
    assertThat(read.getBoolean(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG)).isTrue();
    assertThat(read.getInt(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION)).isEqualTo(1);
  }
}
