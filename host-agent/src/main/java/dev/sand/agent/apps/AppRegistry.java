package dev.sand.agent.apps;

import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The apps deployed on this host, by name, and one lock per name: calls that change an app hold its
 * lock ({@code synchronized (registry.lockOf(name))}), so they are serialized per app while
 * different apps proceed in parallel. Thread-safe; no method blocks.
 */
final class AppRegistry {
  private final Map<String, DeployedApp> apps = new ConcurrentHashMap<>();
  private final Map<String, Object> locks = new ConcurrentHashMap<>();

  /** The lock of {@code name}, whether or not it is deployed. */
  Object lockOf(String name) {
    return locks.computeIfAbsent(name, k -> new Object());
  }

  /** The deployed app {@code name}, or empty. */
  Optional<DeployedApp> find(String name) {
    return Optional.ofNullable(apps.get(name));
  }

  /**
   * The deployed app {@code name}.
   *
   * @throws DeployException (NOT_FOUND) when no such app is deployed
   */
  DeployedApp require(String name) {
    return find(name).orElseThrow(() -> notDeployed(name));
  }

  /** Whether {@code name} is deployed. */
  boolean contains(String name) {
    return apps.containsKey(name);
  }

  /** Records {@code app} as the deployed version of its name. */
  void put(DeployedApp app) {
    apps.put(app.name(), app);
  }

  /**
   * Forgets {@code name}.
   *
   * @return the app that was deployed, or empty
   */
  Optional<DeployedApp> remove(String name) {
    return Optional.ofNullable(apps.remove(name));
  }

  /** Every deployed app, by name. */
  List<DeployedApp> all() {
    return apps.values().stream().sorted(Comparator.comparing(DeployedApp::name)).toList();
  }

  /** The grains of every deployed app, by app. */
  Map<String, List<String>> grainsByApp() {
    Map<String, List<String>> grains = new TreeMap<>();
    for (DeployedApp app : all()) {
      grains.put(app.name(), app.grains());
    }
    return grains;
  }

  static DeployException notDeployed(String name) {
    return new DeployException(
        DeployException.Reason.NOT_FOUND, "no application '" + name + "' is deployed");
  }
}
