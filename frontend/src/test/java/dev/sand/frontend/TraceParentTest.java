package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class TraceParentTest {
  private static final String VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  /** A valid version-00 traceparent is kept as it is. */
  @Test
  void normalize_valid_kept() {
    assertThat(TraceParent.normalize(VALID)).isEqualTo(VALID);
    assertThat(TraceParent.normalize(" " + VALID + "\t")).isEqualTo(VALID);
  }

  /** A later version is read as version 00 defines it; its extra fields are dropped. */
  @Test
  void normalize_laterVersion_readAsVersion00() {
    assertThat(
            TraceParent.normalize(
                "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds"))
        .isEqualTo(VALID);
  }

  /** Whatever breaks the W3C rules is ignored (null), never an error. */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "garbage",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
        "0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
      })
  void normalize_invalid_ignored(String value) {
    assertThat(TraceParent.normalize(value)).isNull();
  }

  @Test
  void normalize_absent_null() {
    assertThat(TraceParent.normalize(null)).isNull();
  }
}
