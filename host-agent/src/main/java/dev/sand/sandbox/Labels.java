package dev.sand.sandbox;

import dev.sand.contracts.Names;
import dev.sand.contracts.contractsConstants;
import java.util.Map;

/**
 * The labels and names SAND puts on sandboxes, from the contract ({@code contracts.thrift}) and
 * built nowhere else. The owner label is how an agent recognises its own leftovers after a crash.
 */
public final class Labels {
  /** The host id of the agent that created the sandbox. */
  public static final String OWNER = contractsConstants.LABEL_OWNER;

  /** The application the sandbox isolates. */
  public static final String APP = contractsConstants.LABEL_APP;

  private Labels() {}

  /** The labels of the sandbox of {@code app} created by the agent of {@code hostId}. */
  public static Map<String, String> of(String hostId, String app) {
    return Map.of(OWNER, Names.requireHostId(hostId), APP, Names.requireApp(app));
  }

  /** The sandbox (container) name of {@code app} on {@code hostId}: {@code sand-<host>-<app>}. */
  public static String sandboxName(String hostId, String app) {
    // validated names hold no braces, so neither value can be read as a placeholder
    return contractsConstants
        .SANDBOX_NAME
        .replace("{host}", Names.requireHostId(hostId))
        .replace("{app}", Names.requireApp(app));
  }
}
