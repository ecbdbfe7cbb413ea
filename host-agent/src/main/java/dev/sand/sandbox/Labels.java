package dev.sand.sandbox;

import dev.sand.bus.Names;
import java.util.Map;

/**
 * The labels and names SAND puts on sandboxes, built here and nowhere else. The owner label is how
 * an agent recognises its own leftovers after a crash.
 */
public final class Labels {
  /** The host id of the agent that created the sandbox. */
  public static final String OWNER = "dev.sand.owner";

  /** The application the sandbox isolates. */
  public static final String APP = "dev.sand.app";

  private Labels() {}

  /** The labels of the sandbox of {@code app} created by the agent of {@code hostId}. */
  public static Map<String, String> of(String hostId, String app) {
    return Map.of(OWNER, Names.requireHostId(hostId), APP, Names.requireApp(app));
  }

  /** The sandbox (container) name of {@code app} on {@code hostId}: {@code sand-<host>-<app>}. */
  public static String sandboxName(String hostId, String app) {
    return "sand-" + Names.requireHostId(hostId) + "-" + Names.requireApp(app);
  }
}
