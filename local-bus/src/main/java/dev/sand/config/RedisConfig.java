package dev.sand.config;

import java.nio.file.Path;

/**
 * The host's Redis (local bus and local data layer).
 *
 * @param socket absolute path of Redis's unix socket ({@code redis.socket})
 */
public record RedisConfig(Path socket) {
  public RedisConfig {
    socket = Checks.absolute("socket", socket);
  }
}
