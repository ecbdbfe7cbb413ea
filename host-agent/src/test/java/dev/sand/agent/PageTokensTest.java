package dev.sand.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sand.store.ExecutionQuery;
import dev.sand.store.HistoryEntry;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;

class PageTokensTest {
  /** A listing cursor survives the trip through its token. */
  @Test
  void listingToken_roundTrips() {
    ExecutionQuery.Cursor cursor =
        new ExecutionQuery.Cursor(1_764_000_000_123L, "0123456789abcdef0123456789abcdef");

    assertThat(PageTokens.listing(PageTokens.encode(cursor))).isEqualTo(cursor);
  }

  /** A history cursor survives the trip through its token. */
  @Test
  void historyToken_roundTrips() {
    HistoryEntry.Cursor cursor = new HistoryEntry.Cursor(1_764_000_000_123L, "batch-1", 7);

    assertThat(PageTokens.history(PageTokens.encode(cursor))).isEqualTo(cursor);
  }

  /** Tokens are URL-safe: no padding, no '+' or '/', so they go in a query as they are. */
  @Test
  void tokens_areUrlSafe() {
    String token = PageTokens.encode(new HistoryEntry.Cursor(Long.MAX_VALUE, "??>>??", 1));

    assertThat(token).matches("[A-Za-z0-9_-]+");
  }

  /** The token keeps full field names (persisted tokens are readable when decoded). */
  @Test
  void token_holdsFullFieldNames() {
    String token = PageTokens.encode(new ExecutionQuery.Cursor(5, "abc"));
    String json = new String(Base64.getUrlDecoder().decode(token), StandardCharsets.UTF_8);

    assertThat(json).contains("\"started_ms\":5", "\"execution_id\":\"abc\"");
  }

  /** A history token is refused by the listing and the other way round, naming page. */
  @Test
  void tokenOfTheOtherListing_isRefusedNamingPage() {
    String history = PageTokens.encode(new HistoryEntry.Cursor(1, "b", 0));
    String listing = PageTokens.encode(new ExecutionQuery.Cursor(1, "abc"));

    assertThatThrownBy(() -> PageTokens.listing(history))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("page must be a next_page token");
    assertThatThrownBy(() -> PageTokens.history(listing))
        .hasMessageStartingWith("page must be a next_page token");
  }

  /** Garbage, valid base64 of something else, and a negative index are refused alike. */
  @Test
  void malformedTokens_areRefused() {
    String notJson =
        Base64.getUrlEncoder().encodeToString("hello".getBytes(StandardCharsets.UTF_8));
    String wrongShape =
        Base64.getUrlEncoder()
            .encodeToString(
                "{\"kind\":\"history\",\"at_ms\":1,\"batch\":\"b\",\"index\":-1}"
                    .getBytes(StandardCharsets.UTF_8));
    for (String token : new String[] {"%%%", notJson, wrongShape, ""}) {
      assertThatThrownBy(() -> PageTokens.history(token))
          .as(token)
          .hasMessageStartingWith("page must be a next_page token");
    }
  }
}
