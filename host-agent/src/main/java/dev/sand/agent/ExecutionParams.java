package dev.sand.agent;

import dev.sand.contracts.ExecutionStatus;
import dev.sand.store.ExecutionQuery;
import dev.sand.store.HistoryEntry;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.Arrays;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The query parameters of the execution routes, checked: a bad value is refused with a message
 * naming the parameter, the rule and the value. Unknown parameters are ignored.
 */
final class ExecutionParams {
  static final int DEFAULT_LIST_LIMIT = 100;
  static final int DEFAULT_HISTORY_LIMIT = 200;
  static final int MAX_LIMIT = ExecutionQuery.MAX_LIMIT;

  private ExecutionParams() {}

  /**
   * The filters and paging of {@code GET /v1/executions}.
   *
   * @param app only this application's executions, or empty for every app the caller may use
   * @param status only executions in this status
   * @param since only executions started at or after this time
   * @param limit at most this many
   * @param after continue after this row
   */
  record Listing(
      Optional<String> app,
      Optional<ExecutionStatus> status,
      Optional<Instant> since,
      int limit,
      Optional<ExecutionQuery.Cursor> after) {

    /** The store's query over {@code apps} (the apps the caller may list). */
    ExecutionQuery query(Set<String> apps) {
      return new ExecutionQuery(apps, status, since, limit, after);
    }
  }

  /**
   * The paging of {@code GET /v1/executions/{id}/history}.
   *
   * @param limit at most this many events
   * @param after continue after this event, or null from the first
   */
  record History(int limit, HistoryEntry.Cursor after) {}

  /**
   * Reads the listing's parameters from {@code param} (a query parameter's value by name, null when
   * absent).
   *
   * @throws IllegalArgumentException naming the parameter
   */
  static Listing listing(Function<String, String> param) {
    Optional<String> app = Optional.ofNullable(param.apply("app"));
    if (app.isPresent()) {
      try {
        dev.sand.contracts.Names.requireApp(app.get());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("app: " + e.getMessage(), e);
      }
    }
    return new Listing(
        app,
        Optional.ofNullable(param.apply("status")).map(ExecutionParams::status),
        Optional.ofNullable(param.apply("since")).map(ExecutionParams::since),
        limit(param.apply("limit"), DEFAULT_LIST_LIMIT),
        Optional.ofNullable(param.apply("page")).map(PageTokens::listing));
  }

  /**
   * Reads the history's parameters.
   *
   * @throws IllegalArgumentException naming the parameter
   */
  static History history(Function<String, String> param) {
    String page = param.apply("page");
    return new History(
        limit(param.apply("limit"), DEFAULT_HISTORY_LIMIT),
        page == null ? null : PageTokens.history(page));
  }

  static ExecutionStatus status(String text) {
    try {
      return ExecutionStatus.valueOf(text);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "status must be one of "
              + Arrays.stream(ExecutionStatus.values())
                  .map(Enum::name)
                  .collect(Collectors.joining(", "))
              + ", got '"
              + text
              + "'",
          e);
    }
  }

  /** Epoch milliseconds (digits) or an RFC 3339 timestamp with its offset. */
  static Instant since(String text) {
    if (!text.isEmpty() && text.chars().allMatch(Character::isDigit)) {
      try {
        return Instant.ofEpochMilli(Long.parseLong(text));
      } catch (NumberFormatException | java.time.DateTimeException e) {
        // too large: answered below
      }
    } else {
      try {
        return OffsetDateTime.parse(text).toInstant();
      } catch (DateTimeParseException e) {
        // answered below
      }
    }
    throw new IllegalArgumentException(
        "since must be epoch milliseconds or an RFC 3339 timestamp (2026-01-31T12:00:00Z), got '"
            + text
            + "'");
  }

  static int limit(String text, int fallback) {
    if (text == null) {
      return fallback;
    }
    try {
      int limit = Integer.parseInt(text);
      if (limit >= 1 && limit <= MAX_LIMIT) {
        return limit;
      }
    } catch (NumberFormatException e) {
      // answered below with the same message as a number out of range
    }
    throw new IllegalArgumentException(
        "limit must be an integer 1.." + MAX_LIMIT + ", got '" + text + "'");
  }
}
