package dev.sand.agent.apps;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.bus.redis.LocalBusException;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.contracts.Keys;
import dev.sand.sandbox.SandboxInfo;
import dev.sand.sandbox.SandboxRuntime;
import java.nio.charset.StandardCharsets;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What runs on this host, for the cluster view ({@code GET /v1/cluster} of the frontends): per
 * deployed app its sandbox's state and each grain worker's health. A worker is healthy while its
 * readiness key ({@code sand:ready:<app>:<grain>}, holding its pid) is set: the worker renews it
 * every few seconds and it expires when the worker stops. A worker whose grain cannot be imported
 * keeps running (each of its events fails, explained) and says why beside its readiness key ({@code
 * sand:broken:<app>:<grain>}): it is reported unhealthy, with that reason. Blocking (asks the
 * runtime and Redis).
 */
final class SandboxReport {
  // the app writes its own reason: what the cluster view shows of it is bounded
  private static final int MAX_REASON = 2_000;

  private SandboxReport() {}

  /**
   * One entry per app of {@code deployed}: {@code app, owner, version, backend, state, workers:
   * [{grain, healthy, pid, error?}]}; {@code bus} null (not connected) reports every worker
   * unhealthy.
   */
  static ArrayNode of(List<DeployedApp> deployed, RedisLocalBus bus, ObjectMapper mapper) {
    ArrayNode sandboxes = mapper.createArrayNode();
    // one listing per runtime, not one per app (a Docker API call each)
    Map<SandboxRuntime, List<SandboxInfo>> listed = new IdentityHashMap<>();
    Map<SandboxRuntime, String> failed = new IdentityHashMap<>();
    for (DeployedApp app : deployed) {
      ObjectNode entry = sandboxes.addObject();
      entry.put("app", app.name());
      if (app.metadata().path("owner").isTextual()) {
        entry.put("owner", app.metadata().path("owner").asText());
      } else {
        entry.putNull("owner");
      }
      entry.put("version", app.version());
      entry.put("backend", app.backend().wireName());
      entry.put("state", state(app, listed, failed));
      ArrayNode workers = entry.putArray("workers");
      for (String grain : app.grains()) {
        ObjectNode worker = workers.addObject();
        worker.put("grain", grain);
        Optional<Long> pid = readyPid(bus, app.name(), grain);
        Optional<String> broken =
            pid.isPresent() ? broken(bus, app.name(), grain) : Optional.empty();
        worker.put("healthy", pid.isPresent() && broken.isEmpty());
        broken.ifPresent(reason -> worker.put("error", reason));
        if (pid.isPresent() && pid.get() > 0) {
          worker.put("pid", pid.get());
        } else {
          worker.putNull("pid");
        }
      }
    }
    return sandboxes;
  }

  private static String state(
      DeployedApp app,
      Map<SandboxRuntime, List<SandboxInfo>> listed,
      Map<SandboxRuntime, String> failed) {
    SandboxRuntime runtime = app.runtime();
    if (!listed.containsKey(runtime) && !failed.containsKey(runtime)) {
      try {
        listed.put(runtime, runtime.listOwned());
      } catch (RuntimeException e) {
        failed.put(runtime, e.getMessage());
      }
    }
    List<SandboxInfo> owned = listed.get(runtime);
    return owned == null ? "unknown (" + failed.get(runtime) + ")" : app.sandboxState(owned);
  }

  /** Why the worker's grain cannot be imported, as the worker said (at most 2,000 chars). */
  private static Optional<String> broken(RedisLocalBus bus, String app, String grain) {
    try {
      return bus.get(Keys.broken(app, grain))
          .map(raw -> new String(raw, StandardCharsets.UTF_8).strip())
          .map(
              reason ->
                  reason.length() > MAX_REASON ? reason.substring(0, MAX_REASON) + "…" : reason);
    } catch (LocalBusException e) {
      return Optional.empty();
    }
  }

  /** The pid in the worker's readiness key; empty when the key is absent or Redis fails. */
  private static Optional<Long> readyPid(RedisLocalBus bus, String app, String grain) {
    if (bus == null) {
      return Optional.empty();
    }
    try {
      return bus.get(Keys.ready(app, grain))
          .map(
              raw -> {
                try {
                  return Long.parseLong(new String(raw, StandardCharsets.UTF_8).strip());
                } catch (NumberFormatException e) {
                  return 0L; // set, so ready, but not a pid
                }
              });
    } catch (LocalBusException e) {
      return Optional.empty();
    }
  }
}
