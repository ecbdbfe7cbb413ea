package dev.sand.agent;

import java.time.Duration;

/**
 * How the agent waits for its dependencies.
 *
 * @param firstRetry delay after the first failed attempt to open a dependency
 * @param maxRetry the delay doubles up to this
 * @param giveUpAfter start-up fails when a dependency is still unreachable after this
 * @param pingInterval how often an open dependency is checked for {@code /health}
 */
public record Timing(
    Duration firstRetry, Duration maxRetry, Duration giveUpAfter, Duration pingInterval) {
  /** Production values: start-up order of the services does not matter within a minute. */
  public static final Timing DEFAULT =
      new Timing(
          Duration.ofMillis(200),
          Duration.ofSeconds(2),
          Duration.ofSeconds(60),
          // a ping is a Docker API call, a Kafka metadata request and a Cassandra read: every
          // 5 s, not 2, on an idle stack (decision 0027); /health is at most that stale
          Duration.ofSeconds(5));

  public Timing {
    requirePositive("firstRetry", firstRetry);
    requirePositive("maxRetry", maxRetry);
    requirePositive("giveUpAfter", giveUpAfter);
    requirePositive("pingInterval", pingInterval);
    if (maxRetry.compareTo(firstRetry) < 0) {
      throw new IllegalArgumentException(
          "maxRetry must be >= firstRetry, got " + maxRetry + " < " + firstRetry);
    }
  }

  /** The delay before retry number {@code attempt} (0-based): doubling, capped at maxRetry. */
  public Duration retryDelay(int attempt) {
    Duration delay = firstRetry;
    for (int i = 0; i < attempt && delay.compareTo(maxRetry) < 0; i++) {
      delay = delay.multipliedBy(2);
    }
    return delay.compareTo(maxRetry) > 0 ? maxRetry : delay;
  }

  private static void requirePositive(String name, Duration value) {
    if (value == null || value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be > 0, got " + value);
    }
  }
}
