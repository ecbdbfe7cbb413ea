package dev.sand.contracts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class KeysTest {
  /** A grain's local queue is sand:q:{app}:{grain}. */
  @Test
  void grain_buildsPrefixedKey() {
    assertThat(Keys.grain("thumbs", "resize_image")).isEqualTo("sand:q:thumbs:resize_image");
  }

  /** The host agent's queue is sand:agent:{host}. */
  @Test
  void agent_buildsPrefixedKey() {
    assertThat(Keys.agent("host-1")).isEqualTo("sand:agent:host-1");
  }

  /** An execution's result queue is sand:result:{execution}. */
  @Test
  void result_buildsPrefixedKey() {
    assertThat(Keys.result("9f1c-42")).isEqualTo("sand:result:9f1c-42");
  }

  /** A name holding the key separator is refused, naming the value, so keys stay unambiguous. */
  @Test
  void grain_nameWithSeparator_isRefused() {
    assertThatThrownBy(() -> Keys.grain("thumbs", "a:b"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("grain name")
        .hasMessageContaining("'a:b'");
  }

  /** Application names follow the Python side: lower case, digits, dashes. */
  @Test
  void grain_upperCaseApp_isRefused() {
    assertThatThrownBy(() -> Keys.grain("Thumbs", "resize"))
        .hasMessageContaining("application name")
        .hasMessageContaining("'Thumbs'");
  }

  /** Every key starts with the one prefix. */
  @Test
  void everyKey_startsWithPrefix() {
    assertThat(Keys.grain("a", "b")).startsWith(Keys.PREFIX);
    assertThat(Keys.agent("h")).startsWith(Keys.PREFIX);
    assertThat(Keys.result("e")).startsWith(Keys.PREFIX);
  }
}
