package dev.sand.contracts;

import java.util.regex.Pattern;

/**
 * The rules for names that end up inside external names (Redis keys, Kafka topics, container
 * labels), from {@code contracts.thrift}. Every builder checks its inputs here, so a name that
 * would make a key or topic ambiguous is refused where it enters, with a message naming the value.
 * The Python side ({@code sand.contracts}) applies the same expressions.
 *
 * <p>No name may contain {@code :} (the Redis key separator) or {@code .} (the Kafka topic
 * separator), so a key or topic splits back unambiguously.
 */
public final class Names {
  private static final Pattern APP = Pattern.compile(contractsConstants.NAME_APP);
  private static final Pattern GRAIN = Pattern.compile(contractsConstants.NAME_GRAIN);
  private static final Pattern WORKFLOW = Pattern.compile(contractsConstants.NAME_WORKFLOW);
  private static final Pattern HOST = Pattern.compile(contractsConstants.NAME_HOST);
  private static final Pattern EXECUTION = Pattern.compile(contractsConstants.NAME_EXECUTION);
  private static final Pattern DATA_REQUEST = Pattern.compile(contractsConstants.NAME_DATA_REQUEST);
  private static final Pattern USER = Pattern.compile(contractsConstants.NAME_USER);

  private Names() {}

  /**
   * Returns {@code app} if it is a valid application name.
   *
   * @throws IllegalArgumentException naming the value otherwise
   */
  public static String requireApp(String app) {
    return require("application name", APP, app);
  }

  /**
   * Returns {@code grain} if it is a valid grain name.
   *
   * @throws IllegalArgumentException naming the value otherwise
   */
  public static String requireGrain(String grain) {
    return require("grain name", GRAIN, grain);
  }

  /**
   * Returns {@code workflow} if it is a valid workflow name.
   *
   * @throws IllegalArgumentException naming the value otherwise
   */
  public static String requireWorkflow(String workflow) {
    return require("workflow name", WORKFLOW, workflow);
  }

  /**
   * Returns {@code hostId} if it is a valid host (or frontend) id.
   *
   * @throws IllegalArgumentException naming the value otherwise
   */
  public static String requireHostId(String hostId) {
    return require("host id", HOST, hostId);
  }

  /**
   * Returns {@code executionId} if it is a valid execution id.
   *
   * @throws IllegalArgumentException naming the value otherwise
   */
  public static String requireExecutionId(String executionId) {
    return require("execution id", EXECUTION, executionId);
  }

  /**
   * Returns {@code requestId} if it is a valid global-data request id.
   *
   * @throws IllegalArgumentException naming the value otherwise
   */
  public static String requireDataRequest(String requestId) {
    return require("data request id", DATA_REQUEST, requestId);
  }

  /**
   * Returns {@code user} if it is a valid user name.
   *
   * @throws IllegalArgumentException naming the value otherwise
   */
  public static String requireUser(String user) {
    return require("user name", USER, user);
  }

  private static String require(String what, Pattern pattern, String value) {
    if (value == null || !pattern.matcher(value).matches()) {
      throw new IllegalArgumentException(
          what
              + " must match "
              + pattern.pattern()
              + ", got "
              + (value == null ? "null" : "'" + value + "'"));
    }
    return value;
  }
}
