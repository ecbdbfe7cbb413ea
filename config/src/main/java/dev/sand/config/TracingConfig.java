package dev.sand.config;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Optional;

/**
 * Where the spans of traced executions go ({@code tracing}; decision 0019).
 *
 * @param otlpEndpoint the OTLP/HTTP traces URL of a collector ({@code tracing.otlp_endpoint}), like
 *     {@code http://127.0.0.1:4318/v1/traces}; empty: spans are not exported (the default)
 */
public record TracingConfig(Optional<URI> otlpEndpoint) {
  /** No export: what a config without the section means. */
  public static final TracingConfig OFF = new TracingConfig(Optional.empty());

  public TracingConfig {
    otlpEndpoint = otlpEndpoint == null ? Optional.empty() : otlpEndpoint;
    otlpEndpoint.ifPresent(TracingConfig::check);
  }

  /**
   * The config of {@code endpoint}; "" turns export off.
   *
   * @throws ConfigException naming {@code otlp_endpoint} when it is not an http(s) URL
   */
  public static TracingConfig of(String endpoint) {
    if (endpoint == null || endpoint.isEmpty()) {
      return OFF;
    }
    try {
      return new TracingConfig(Optional.of(new URI(endpoint)));
    } catch (URISyntaxException e) {
      throw ConfigException.invalid(
          "otlp_endpoint", "must be an http(s) URL, got '" + endpoint + "': " + e.getReason());
    }
  }

  private static void check(URI endpoint) {
    String scheme = endpoint.getScheme();
    if (!("http".equals(scheme) || "https".equals(scheme)) || endpoint.getHost() == null) {
      throw ConfigException.invalid(
          "otlp_endpoint",
          "must be an http(s) URL like http://127.0.0.1:4318/v1/traces, got '" + endpoint + "'");
    }
  }
}
