package dev.sand.config;

/**
 * A TCP endpoint written {@code host:port} in the config file.
 *
 * @param host a host name or IPv4 address (IPv6 literals go in brackets: {@code [::1]:9042})
 * @param port 1..65535
 */
public record HostPort(String host, int port) {
  public HostPort {
    Checks.nonBlank("host", host);
    Checks.port("port", port);
  }

  /**
   * Parses {@code host:port}.
   *
   * @throws ConfigException under {@code key} when the text is not {@code host:port}
   */
  public static HostPort parse(String key, String text) {
    int colon = text.lastIndexOf(':');
    if (colon <= 0 || colon == text.length() - 1) {
      throw ConfigException.invalid(key, "must be host:port, got '" + text + "'");
    }
    String host = text.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    int port;
    try {
      port = Integer.parseInt(text.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw ConfigException.invalid(key, "must be host:port, got '" + text + "'");
    }
    try {
      return new HostPort(host, port);
    } catch (ConfigException e) {
      throw ConfigException.invalid(key, "must be host:port with a valid port, got '" + text + "'");
    }
  }

  @Override
  public String toString() {
    return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
  }
}
