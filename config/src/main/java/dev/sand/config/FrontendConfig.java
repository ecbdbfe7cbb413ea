package dev.sand.config;

import java.util.HashSet;
import java.util.List;

/**
 * The frontends of this host.
 *
 * @param ports one TCP port per frontend process, distinct ({@code frontend.ports})
 * @param maxPayloadKb the largest request body accepted, in KiB ({@code frontend.max_payload_kb})
 */
public record FrontendConfig(List<Integer> ports, int maxPayloadKb) {
  /** Larger payloads belong in the data layer, not in an event. */
  public static final int MAX_PAYLOAD_KB_LIMIT = 10 * 1024;

  public FrontendConfig {
    if (ports == null || ports.isEmpty()) {
      throw ConfigException.invalid("ports", "must list at least one port");
    }
    for (int i = 0; i < ports.size(); i++) {
      Checks.port("ports[" + i + "]", ports.get(i));
    }
    if (new HashSet<>(ports).size() != ports.size()) {
      throw ConfigException.invalid("ports", "must be distinct, got " + ports);
    }
    ports = List.copyOf(ports);
    if (maxPayloadKb < 1 || maxPayloadKb > MAX_PAYLOAD_KB_LIMIT) {
      throw ConfigException.invalid(
          "max_payload_kb", "must be 1.." + MAX_PAYLOAD_KB_LIMIT + ", got " + maxPayloadKb);
    }
  }

  /** The body limit in bytes. */
  public int maxPayloadBytes() {
    return maxPayloadKb * 1024;
  }
}
