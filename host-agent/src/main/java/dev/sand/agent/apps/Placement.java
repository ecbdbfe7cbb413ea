package dev.sand.agent.apps;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Which hosts run an application and each of its grains (decision 0013), as the validator resolved
 * it ({@code placement} of {@code python -m sand_worker.describe --hosts ...}): every grain named,
 * with its hosts in cluster order. The rules (known hosts, grains, groups not split) are checked
 * there, in Python; this record only answers questions about the result. Immutable.
 *
 * @param hosts the hosts that run the app
 * @param grains every grain → the hosts that run it (a subset of {@code hosts})
 */
record Placement(List<String> hosts, Map<String, List<String>> grains) {
  Placement {
    hosts = List.copyOf(hosts);
    Map<String, List<String>> copy = new LinkedHashMap<>();
    grains.forEach((grain, on) -> copy.put(grain, List.copyOf(on)));
    grains = java.util.Collections.unmodifiableMap(copy);
  }

  /**
   * The placement in an app's description; an absent one (an older validator) places every grain on
   * every host, as before placement existed.
   *
   * @throws DeployException (INTERNAL) when the description's placement names a grain it lacks
   */
  static Placement of(JsonNode description, List<String> clusterHosts) {
    List<String> allGrains = new ArrayList<>();
    description.path("grains").forEach(g -> allGrains.add(g.asText()));
    JsonNode node = description.path("placement");
    if (!node.path("hosts").isArray() || !node.path("grains").isObject()) {
      Map<String, List<String>> everywhere = new LinkedHashMap<>();
      allGrains.forEach(g -> everywhere.put(g, clusterHosts));
      return new Placement(clusterHosts, everywhere);
    }
    Map<String, List<String>> grains = new LinkedHashMap<>();
    for (String grain : allGrains) {
      JsonNode on = node.path("grains").path(grain);
      if (!on.isArray()) {
        throw new DeployException(
            DeployException.Reason.INTERNAL,
            "the validator placed no host for grain '" + grain + "': " + node);
      }
      grains.put(grain, texts(on));
    }
    return new Placement(texts(node.path("hosts")), grains);
  }

  /** The grains placed on {@code host}, in the app's order; empty when it runs none. */
  List<String> grainsOn(String host) {
    return grains.entrySet().stream()
        .filter(e -> e.getValue().contains(host))
        .map(Map.Entry::getKey)
        .toList();
  }

  /** The grains not placed on {@code host}: events to them go through their Kafka topics. */
  Set<String> grainsElsewhere(String host) {
    Set<String> elsewhere = new TreeSet<>(grains.keySet());
    elsewhere.removeAll(grainsOn(host));
    return elsewhere;
  }

  /** Whether {@code host} runs any grain of the app (else it runs no sandbox for it). */
  boolean runsOn(String host) {
    return !grainsOn(host).isEmpty();
  }

  /** As JSON: {@code {"hosts": [...], "grains": {grain: [...]}}}. */
  ObjectNode toJson(ObjectMapper mapper) {
    ObjectNode node = mapper.createObjectNode();
    hosts.forEach(node.putArray("hosts")::add);
    ObjectNode byGrain = node.putObject("grains");
    grains.forEach((grain, on) -> on.forEach(byGrain.putArray(grain)::add));
    return node;
  }

  private static List<String> texts(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(h -> out.add(h.asText()));
    return out;
  }
}
