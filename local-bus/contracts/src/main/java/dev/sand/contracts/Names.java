package dev.sand.contracts;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
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

  /**
   * The cgroup that holds the process sandboxes of the host whose state dir is {@code stateDir} (an
   * absolute path, as the host's config names it): {@code sand-} and the first 16 hex digits of its
   * SHA-256 ({@code CGROUP_PARENT}).
   *
   * @throws IllegalArgumentException when {@code stateDir} is not absolute
   */
  public static String sandboxCgroup(String stateDir) {
    if (stateDir == null || !stateDir.startsWith("/")) {
      throw new IllegalArgumentException(
          "state dir must be an absolute path, got " + (stateDir == null ? "null" : stateDir));
    }
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-256").digest(stateDir.getBytes(StandardCharsets.UTF_8));
      String hex = HexFormat.of().formatHex(digest).substring(0, 16);
      return contractsConstants.CGROUP_PARENT.replace("{hash}", hex);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
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
