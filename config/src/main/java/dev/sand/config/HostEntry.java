package dev.sand.config;

import dev.sand.contracts.Names;
import java.net.URI;
import java.nio.file.Path;

/**
 * One host of the cluster as the shared services see it ({@code hosts[i]} of the config file).
 *
 * @param id the host's id ({@code id}), as in keys and container labels
 * @param redisSocket absolute path of the host's Redis socket ({@code redis_socket})
 * @param agentUrl the base URL of the host's agent HTTP API ({@code agent_url}), {@code
 *     http://ip:port}
 */
public record HostEntry(String id, Path redisSocket, URI agentUrl) {
  public HostEntry {
    try {
      Names.requireHostId(id);
    } catch (IllegalArgumentException e) {
      throw ConfigException.invalid("id", e.getMessage());
    }
    redisSocket = Checks.absolute("redis_socket", redisSocket);
    if (agentUrl == null
        || !"http".equals(agentUrl.getScheme())
        || agentUrl.getHost() == null
        || agentUrl.getPort() < 1) {
      throw ConfigException.invalid(
          "agent_url", "must be http://host:port, got '" + agentUrl + "'");
    }
  }
}
