package dev.sand.agent.apps;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The apps deployed in the cluster whose placement leaves this host out (decision 0013): their
 * metadata, shown by list and describe. They have no sandbox and no {@code sand:app} key here, so
 * no invocation comes here. Thread-safe.
 */
final class PlacedElsewhere {
  private final Map<String, ObjectNode> apps = new ConcurrentHashMap<>();
  private final String hostId;
  private final Clock clock;
  private final ObjectMapper mapper;

  PlacedElsewhere(String hostId, Clock clock, ObjectMapper mapper) {
    this.hostId = hostId;
    this.clock = clock;
    this.mapper = mapper;
  }

  /**
   * Keeps {@code version} of {@code name} as placed on other hosts only.
   *
   * @return its metadata: the description, version, options and placement, no local grains
   */
  ObjectNode put(
      String name,
      int version,
      ObjectNode description,
      DeployOptions options,
      Placement placement) {
    ObjectNode metadata = description.deepCopy();
    metadata.put("version", version);
    metadata.put("backups", options.backups());
    options.owner().ifPresent(o -> metadata.put("owner", o));
    metadata.set("placement", placement.toJson(mapper));
    metadata.putArray("local_grains");
    metadata.put("host", hostId);
    metadata.put("deployed_at", Instant.now(clock).toString());
    apps.put(name, metadata);
    return metadata;
  }

  /** Forgets {@code name}; whether it was kept. */
  boolean remove(String name) {
    return apps.remove(name) != null;
  }

  /** Forgets every app not in {@code kept}. */
  void retainAll(Set<String> kept) {
    apps.keySet().retainAll(kept);
  }

  /** The version of {@code name} kept here, else 0. */
  int version(String name) {
    ObjectNode metadata = apps.get(name);
    return metadata == null ? 0 : metadata.path("version").asInt();
  }

  /** The metadata of {@code name} as list and describe show it, or empty. */
  Optional<ObjectNode> describe(String name) {
    return Optional.ofNullable(apps.get(name)).map(PlacedElsewhere::shown);
  }

  /** The metadata of every app kept, as list shows it. */
  List<ObjectNode> list() {
    return apps.values().stream().map(PlacedElsewhere::shown).toList();
  }

  private static ObjectNode shown(ObjectNode metadata) {
    ObjectNode node = metadata.deepCopy();
    node.putNull("sandbox");
    node.put("state", "not placed on this host");
    return node;
  }
}
