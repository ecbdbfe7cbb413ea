package dev.sand.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class TimingTest {
  private final Timing timing =
      new Timing(
          Duration.ofMillis(100),
          Duration.ofMillis(1000),
          Duration.ofSeconds(60),
          Duration.ofSeconds(1));

  /** Retry delays double from the first delay and stop growing at the cap. */
  @Test
  void retryDelay_doublesUpToCap() {
    assertThat(timing.retryDelay(0)).isEqualTo(Duration.ofMillis(100));
    assertThat(timing.retryDelay(1)).isEqualTo(Duration.ofMillis(200));
    assertThat(timing.retryDelay(3)).isEqualTo(Duration.ofMillis(800));
    assertThat(timing.retryDelay(4)).isEqualTo(Duration.ofMillis(1000));
    assertThat(timing.retryDelay(1_000_000)).isEqualTo(Duration.ofMillis(1000));
  }

  /** A cap below the first delay is refused, naming both. */
  @Test
  void constructor_capBelowFirst_isRefused() {
    assertThatThrownBy(
            () ->
                new Timing(
                    Duration.ofSeconds(2),
                    Duration.ofSeconds(1),
                    Duration.ofSeconds(60),
                    Duration.ofSeconds(1)))
        .hasMessageContaining("maxRetry must be >= firstRetry");
  }
}
