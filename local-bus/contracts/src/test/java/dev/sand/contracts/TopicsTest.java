package dev.sand.contracts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class TopicsTest {
  /** A grain's topic is sand.{app}.{grain}. */
  @Test
  void grain_buildsDottedTopic() {
    assertThat(Topics.grain("thumbs", "resize")).isEqualTo("sand.thumbs.resize");
  }

  /** Results share one topic. */
  @Test
  void results_isFixed() {
    assertThat(Topics.RESULTS).isEqualTo("sand.results");
  }

  /** A dot in a name would let two (app, grain) pairs share a topic, so it is refused. */
  @Test
  void grain_nameWithDot_isRefused() {
    assertThatThrownBy(() -> Topics.grain("thumbs", "x.y"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'x.y'");
  }
}
