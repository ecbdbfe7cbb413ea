package dev.sand.config;

import java.nio.file.Path;

/**
 * The host's Redis (local bus and local data layer).
 *
 * @param socket absolute path of Redis's unix socket ({@code redis.socket})
 * @param password the default user's password ({@code redis.password}); empty for none
 */
public record RedisConfig(Path socket, String password) {
  public RedisConfig {
    socket = Checks.absolute("socket", socket);
    password = password == null ? "" : password;
  }

  /** A Redis without a password (tests). */
  public RedisConfig(Path socket) {
    this(socket, "");
  }

  @Override
  public String toString() {
    // never print the password
    return "RedisConfig[socket=" + socket + "]";
  }
}
