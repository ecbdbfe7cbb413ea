package dev.sand.config;

import java.util.regex.Pattern;

/**
 * The host agent of this host.
 *
 * @param port TCP port of its HTTP endpoint ({@code host_agent.port})
 * @param bind IPv4 address it listens on ({@code host_agent.bind}): {@code 127.0.0.1} on a single
 *     host; the address of the host's own network namespace when several hosts share a machine
 * @param secret what every request to an agent must carry ({@code host_agent.secret}, header {@code
 *     X-Sand-Internal}; decision 0017); empty when the file has none, and then the agent answers
 *     nothing but its health
 */
public record HostAgentConfig(int port, String bind, String secret) {
  /** Where an agent listens when the file does not say: loopback, as before the key existed. */
  public static final String DEFAULT_BIND = "127.0.0.1";

  private static final Pattern IPV4 =
      Pattern.compile(
          "((25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)");

  public HostAgentConfig {
    Checks.port("port", port);
    // a literal, not a name: the agent must not depend on a resolver to open its port
    if (bind == null || !IPV4.matcher(bind).matches()) {
      throw ConfigException.invalid(
          "bind", "must be an IPv4 address like 127.0.0.1, got '" + bind + "'");
    }
    secret = secret == null ? "" : secret;
  }

  /** An agent on loopback without a secret (tests). */
  public HostAgentConfig(int port) {
    this(port, DEFAULT_BIND, "");
  }

  @Override
  public String toString() {
    // never print the secret
    return "HostAgentConfig[port=" + port + ", bind=" + bind + "]";
  }
}
