package dev.sand.config;

import dev.sand.contracts.contractsConstants;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;

/**
 * The frontends of this host.
 *
 * @param ports one TCP port per frontend process, distinct ({@code frontend.ports})
 * @param maxPayloadKb the largest request body accepted, in KiB ({@code frontend.max_payload_kb})
 * @param uiDir the built web GUI served at {@code /ui/} ({@code frontend.ui_dir}, absolute); null
 *     when the config names none and has no {@code home} to derive it from (then {@code /ui/}
 *     answers that the GUI is not built)
 */
public record FrontendConfig(List<Integer> ports, int maxPayloadKb, Path uiDir) {
  /** Larger payloads belong in the data layer, not in an event. */
  public static final int MAX_PAYLOAD_KB_LIMIT = contractsConstants.CONFIG_MAX_PAYLOAD_KB;

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
    if (uiDir != null) {
      uiDir = Checks.absolute("ui_dir", uiDir);
    }
  }

  /** A frontend without a GUI directory (tests, older config files). */
  public FrontendConfig(List<Integer> ports, int maxPayloadKb) {
    this(ports, maxPayloadKb, null);
  }

  /** Where the GUI is when the config does not say: {@code <home>/frontend/ui/dist}. */
  public static Path defaultUiDir(Path home) {
    return home.resolve("frontend").resolve("ui").resolve("dist");
  }

  /** The body limit in bytes. */
  public int maxPayloadBytes() {
    return maxPayloadKb * 1024;
  }
}
