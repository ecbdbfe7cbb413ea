package dev.sand.store.cassandra;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class BatchesTest {
  @Test
  void utf8Length_isTheEncodedLength() {
    for (String text : new String[] {"", "plain", "é€", "日本語のテキスト", "emoji 😀 and ünïcode"}) {
      assertThat(Batches.utf8Length(text))
          .as(text)
          .isEqualTo(text.getBytes(StandardCharsets.UTF_8).length);
    }
  }

  @Test
  void size_countsBytesNotChars() {
    String wide = "語".repeat(1000); // 3 bytes each
    assertThat(Batches.size(wide)).isEqualTo(128 + 3000);
    assertThat(Batches.size(null, "ab")).isEqualTo(128 + 2);
  }
}
