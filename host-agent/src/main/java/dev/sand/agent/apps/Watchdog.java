package dev.sand.agent.apps;

import dev.sand.sandbox.SandboxInfo;
import dev.sand.sandbox.SandboxRuntime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Restarts the sandboxes of deployed apps that are no longer running, and notes each restart in the
 * app's log. Holds each app's lock while it looks at it, so it never restarts a sandbox that a
 * deploy or undeploy is replacing. Blocking (asks each runtime once per round); thread-safe.
 */
final class Watchdog {
  private static final Logger LOG = LoggerFactory.getLogger(Watchdog.class);

  private final AppRegistry apps;
  private final AppLog log;

  Watchdog(AppRegistry apps, AppLog log) {
    this.apps = apps;
    this.log = log;
  }

  /**
   * Restarts every sandbox that is not running. Never throws: a runtime that does not answer is
   * logged and asked again next round.
   *
   * @return the apps whose sandbox was restarted (their in-flight events need replaying)
   */
  List<String> restartDead() {
    List<String> restarted = new ArrayList<>();
    // one listing per runtime and round, however many apps it holds
    Map<SandboxRuntime, List<SandboxInfo>> owned = new LinkedHashMap<>();
    for (DeployedApp app : apps.all()) {
      synchronized (apps.lockOf(app.name())) {
        if (apps.find(app.name()).orElse(null) != app) {
          continue; // undeployed or replaced meanwhile
        }
        try {
          String state =
              app.sandboxState(owned.computeIfAbsent(app.runtime(), SandboxRuntime::listOwned));
          if (DeployedApp.isRunning(state)) {
            continue;
          }
          log.note(app.name(), "sandbox " + app.sandbox() + " is " + state + "; restarting it");
          LOG.atWarn()
              .addKeyValue("app", app.name())
              .addKeyValue("state", state)
              .log("sandbox died; restarting");
          app.runtime().start(app.sandbox());
          restarted.add(app.name());
        } catch (RuntimeException e) {
          LOG.atWarn()
              .addKeyValue("app", app.name())
              .addKeyValue("error", e.toString())
              .log("sandbox check failed");
        }
      }
    }
    return restarted;
  }
}
