package dev.sand.config;

/**
 * The load balancer in front of the frontends.
 *
 * @param port TCP port clients use ({@code nginx.port})
 */
public record NginxConfig(int port) {
  public NginxConfig {
    Checks.port("port", port);
  }
}
