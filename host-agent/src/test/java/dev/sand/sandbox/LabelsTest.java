package dev.sand.sandbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

class LabelsTest {
  /** Sandboxes carry the owner host and the application as labels. */
  @Test
  void of_labelsOwnerAndApp() {
    assertThat(Labels.of("host-1", "thumbs"))
        .isEqualTo(Map.of("dev.sand.owner", "host-1", "dev.sand.app", "thumbs"));
  }

  /** A sandbox's name is unique per host and application. */
  @Test
  void sandboxName_combinesHostAndApp() {
    assertThat(Labels.sandboxName("host-1", "thumbs")).isEqualTo("sand-host-1-thumbs");
  }
}
