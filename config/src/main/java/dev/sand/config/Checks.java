package dev.sand.config;

import java.nio.file.Path;

/** Value rules shared by the config records; each throws {@link ConfigException} naming the key. */
final class Checks {
  private Checks() {}

  static int port(String key, int port) {
    if (port < 1 || port > 65535) {
      throw ConfigException.invalid(key, "must be a TCP port 1..65535, got " + port);
    }
    return port;
  }

  static String nonBlank(String key, String value) {
    if (value == null || value.isBlank()) {
      throw ConfigException.invalid(key, "must be a non-empty string, got '" + value + "'");
    }
    return value;
  }

  static Path absolute(String key, Path path) {
    if (path == null || !path.isAbsolute()) {
      throw ConfigException.invalid(key, "must be an absolute path, got '" + path + "'");
    }
    return path.normalize();
  }
}
