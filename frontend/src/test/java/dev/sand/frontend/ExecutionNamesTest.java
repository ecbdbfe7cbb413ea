package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class ExecutionNamesTest {
  /** Names follow the execution-name rule: 1 to 128 of [A-Za-z0-9_-], not starting with _ or -. */
  @Test
  void check_acceptsTheRule_refusesNamingIt() {
    assertThat(ExecutionNames.check("order-7_A")).isEqualTo("order-7_A");
    assertThat(ExecutionNames.check("a".repeat(128))).hasSize(128);
    for (String bad : new String[] {"", "-x", "_x", "a b", "a.b", "a".repeat(129), "é"}) {
      assertThatThrownBy(() -> ExecutionNames.check(bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("name must be 1 to 128 letters, digits, '_' or '-'")
          .hasMessageEndingWith("got '" + bad + "'");
    }
  }

  /** The input's hash is SHA-256 in lowercase hex (what the agent checks and stores). */
  @Test
  void sha256_isLowercaseHex() {
    assertThat(ExecutionNames.sha256("{}".getBytes(StandardCharsets.UTF_8)))
        .isEqualTo("44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
  }
}
