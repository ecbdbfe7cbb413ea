package dev.sand.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sand.contracts.ExecutionStatus;
import dev.sand.store.ExecutionQuery;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ExecutionParamsTest {
  /** Without parameters: every app, every status, the retention window, 100 rows, first page. */
  @Test
  void listing_defaults() {
    ExecutionParams.Listing listing = ExecutionParams.listing(Map.<String, String>of()::get);

    assertThat(listing.app()).isEmpty();
    assertThat(listing.status()).isEmpty();
    assertThat(listing.since()).isEmpty();
    assertThat(listing.limit()).isEqualTo(100);
    assertThat(listing.after()).isEmpty();
  }

  /** Every parameter is read: since as epoch ms or RFC 3339, the page token as a cursor. */
  @Test
  void listing_readsEveryParameter() {
    ExecutionQuery.Cursor cursor = new ExecutionQuery.Cursor(42, "abc");
    ExecutionParams.Listing listing =
        ExecutionParams.listing(
            Map.of(
                    "app", "orders",
                    "status", "ABORTED",
                    "since", "2026-01-31T12:00:00+01:00",
                    "limit", "1000",
                    "page", PageTokens.encode(cursor))
                ::get);

    assertThat(listing.app()).contains("orders");
    assertThat(listing.status()).contains(ExecutionStatus.ABORTED);
    assertThat(listing.since()).contains(Instant.parse("2026-01-31T11:00:00Z"));
    assertThat(listing.limit()).isEqualTo(1000);
    assertThat(listing.after()).contains(cursor);
    assertThat(ExecutionParams.since("1764000000123"))
        .isEqualTo(Instant.ofEpochMilli(1_764_000_000_123L));
  }

  /** Each bad value is refused with the parameter's name, its rule and the value. */
  @Test
  void listing_badValues_nameTheParameter() {
    assertThatThrownBy(() -> ExecutionParams.listing(Map.of("status", "done")::get))
        .hasMessage("status must be one of RUNNING, SUCCEEDED, FAILED, ABORTED, got 'done'");
    assertThatThrownBy(() -> ExecutionParams.listing(Map.of("limit", "0")::get))
        .hasMessage("limit must be an integer 1..1000, got '0'");
    assertThatThrownBy(() -> ExecutionParams.listing(Map.of("limit", "ten")::get))
        .hasMessage("limit must be an integer 1..1000, got 'ten'");
    assertThatThrownBy(() -> ExecutionParams.listing(Map.of("since", "2026-01-31")::get))
        .hasMessageStartingWith("since must be epoch milliseconds or an RFC 3339 timestamp")
        .hasMessageEndingWith("got '2026-01-31'");
    assertThatThrownBy(() -> ExecutionParams.listing(Map.of("since", "99999999999999999999")::get))
        .hasMessageStartingWith("since must be");
    assertThatThrownBy(() -> ExecutionParams.listing(Map.of("app", "Not An App")::get))
        .hasMessageStartingWith("app: ");
    assertThatThrownBy(() -> ExecutionParams.listing(Map.of("page", "xyz")::get))
        .hasMessageStartingWith("page must be a next_page token");
  }

  /** History pages: 200 events by default, at most 1000, a history token. */
  @Test
  void history_limitAndPage() {
    assertThat(ExecutionParams.history(Map.<String, String>of()::get))
        .isEqualTo(new ExecutionParams.History(200, null));
    assertThatThrownBy(() -> ExecutionParams.history(Map.of("limit", "1001")::get))
        .hasMessage("limit must be an integer 1..1000, got '1001'");
    assertThatThrownBy(
            () ->
                ExecutionParams.history(
                    Map.of("page", PageTokens.encode(new ExecutionQuery.Cursor(1, "a")))::get))
        .hasMessageStartingWith("page must be a next_page token");
  }

  /** The listing becomes the store's query over the apps the caller may list. */
  @Test
  void listing_becomesTheStoresQuery() {
    ExecutionQuery query =
        ExecutionParams.listing(Map.of("status", "RUNNING", "limit", "5")::get)
            .query(java.util.Set.of("a", "b"));

    assertThat(query.apps()).containsExactlyInAnyOrder("a", "b");
    assertThat(query.status()).isEqualTo(Optional.of(ExecutionStatus.RUNNING));
    assertThat(query.limit()).isEqualTo(5);
  }
}
