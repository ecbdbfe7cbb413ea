package dev.sand.config;

import java.nio.file.Path;

/**
 * A configuration value is missing or breaks a rule. The message names the file (when known), the
 * key as a dotted JSON path, and the value: {@code /s/conf/cluster.json: key 'host_agent.port' must
 * be a TCP port 1..65535, got 0}.
 *
 * <p>Immutable; {@link #within} and {@link #inFile} return enriched copies as the exception travels
 * up from a record's constructor to {@link ClusterConfig#load}.
 */
public final class ConfigException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final transient Path file;
  private final String key;
  private final String problem;

  private ConfigException(Path file, String key, String problem, Throwable cause) {
    super(format(file, key, problem), cause);
    this.file = file;
    this.key = key;
    this.problem = problem;
  }

  /** {@code key} (relative to the enclosing section) breaks a rule described by {@code problem}. */
  public static ConfigException invalid(String key, String problem) {
    return new ConfigException(null, key, problem, null);
  }

  /** The whole file is unreadable or not JSON. */
  static ConfigException unreadable(Path file, String problem, Throwable cause) {
    return new ConfigException(file, null, problem, cause);
  }

  /** The same problem with {@code section} prepended to the key. */
  ConfigException within(String section) {
    return new ConfigException(file, key == null ? section : section + "." + key, problem, this);
  }

  /** The same problem, located in {@code path}. */
  ConfigException inFile(Path path) {
    return new ConfigException(path, key, problem, this);
  }

  /** The dotted JSON path of the offending key, or null when the file as a whole is at fault. */
  public String key() {
    return key;
  }

  private static String format(Path file, String key, String problem) {
    StringBuilder message = new StringBuilder();
    if (file != null) {
      message.append(file).append(": ");
    }
    if (key != null) {
      message.append("key '").append(key).append("' ");
    }
    return message.append(problem).toString();
  }
}
