package dev.sand.bridge.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.contracts.Topics;
import java.util.List;
import org.junit.jupiter.api.Test;

class KafkaIngressTest {
  /** The ingress reads delivery topics only: never results, never backups. */
  @Test
  void subscription_matchesDeliveryTopicsOnly() {
    assertThat(
            KafkaIngress.matching(
                List.of(
                    Topics.grain("hello", "greet"),
                    Topics.RESULTS,
                    Topics.backup("hello", "greet"),
                    Topics.backup("backup", "greet"),
                    Topics.grain("backup", "greet"))))
        .containsExactly("sand.hello.greet", "sand.backup.greet");
  }
}
