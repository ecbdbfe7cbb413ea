package dev.sand.config;

/**
 * The host agent of this host.
 *
 * @param port TCP port of its HTTP endpoint ({@code host_agent.port})
 */
public record HostAgentConfig(int port) {
  public HostAgentConfig {
    Checks.port("port", port);
  }
}
