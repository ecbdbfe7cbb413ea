package dev.sand.config;

import java.net.URI;

/**
 * The Docker Engine that hosts application sandboxes.
 *
 * @param host the engine's API address ({@code docker.host}): {@code unix:///abs/path.sock} or
 *     {@code tcp://host:port}; not checked, and may be empty, when Docker is not enabled
 * @param enabled false runs the agent without sandboxes ({@code docker.enabled}); health says so
 */
public record DockerConfig(URI host, boolean enabled) {
  public DockerConfig {
    if (host == null) {
      throw ConfigException.invalid("host", "is required");
    }
    // `sand up` with docker.mode = "off" writes no engine address
    if (enabled) {
      requireEngineAddress(host);
    }
  }

  private static void requireEngineAddress(URI host) {
    String scheme = host.getScheme();
    boolean unix =
        "unix".equals(scheme) && host.getPath() != null && host.getPath().startsWith("/");
    boolean tcp = "tcp".equals(scheme) && host.getHost() != null && host.getPort() > 0;
    if (!unix && !tcp) {
      throw ConfigException.invalid(
          "host", "must be unix:///absolute/path or tcp://host:port, got '" + host + "'");
    }
  }
}
