package dev.sand.bus;

import java.util.regex.Pattern;

/**
 * The rules for names that end up inside external names (Redis keys, Kafka topics, container
 * labels). Every builder checks its inputs here, so a name that would make a key or topic ambiguous
 * is refused where it enters, with a message naming the value.
 *
 * <p>The rules match the Python side ({@code sand.keys}): applications are {@code [a-z0-9-]+}; no
 * name may contain {@code :} (the Redis key separator) or {@code .} (the Kafka topic separator), so
 * a key or topic splits back unambiguously.
 */
public final class Names {
  private static final Pattern APP = Pattern.compile("[a-z0-9][a-z0-9-]{0,62}");
  private static final Pattern GRAIN = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_-]{0,127}");
  private static final Pattern HOST = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_-]{0,62}");
  private static final Pattern EXECUTION = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_-]{0,127}");

  private Names() {}

  /**
   * Returns {@code app} if it is a valid application name.
   *
   * @throws IllegalArgumentException naming the value otherwise
   */
  public static String requireApp(String app) {
    return require("application name", APP, "[a-z0-9][a-z0-9-]{0,62}", app);
  }

  /**
   * Returns {@code grain} if it is a valid grain name.
   *
   * @throws IllegalArgumentException naming the value otherwise
   */
  public static String requireGrain(String grain) {
    return require("grain name", GRAIN, "[A-Za-z0-9][A-Za-z0-9_-]{0,127}", grain);
  }

  /**
   * Returns {@code hostId} if it is a valid host id.
   *
   * @throws IllegalArgumentException naming the value otherwise
   */
  public static String requireHostId(String hostId) {
    return require("host id", HOST, "[A-Za-z0-9][A-Za-z0-9_-]{0,62}", hostId);
  }

  /**
   * Returns {@code executionId} if it is a valid execution id.
   *
   * @throws IllegalArgumentException naming the value otherwise
   */
  public static String requireExecutionId(String executionId) {
    return require("execution id", EXECUTION, "[A-Za-z0-9][A-Za-z0-9_-]{0,127}", executionId);
  }

  private static String require(String what, Pattern pattern, String rule, String value) {
    if (value == null || !pattern.matcher(value).matches()) {
      throw new IllegalArgumentException(
          what + " must match " + rule + ", got " + (value == null ? "null" : "'" + value + "'"));
    }
    return value;
  }
}
