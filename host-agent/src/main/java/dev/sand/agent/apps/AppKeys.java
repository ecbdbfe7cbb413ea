package dev.sand.agent.apps;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.contracts.Keys;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanIterator;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * An app's keys on the local bus, as the deployer sees them: the metadata at {@code sand:app:<app>}
 * that makes it invocable, its grain workers' readiness keys, and everything it owns (queues,
 * groups, data) to delete when it goes. Thread-safe; every method makes one or a few Redis round
 * trips and throws {@link dev.sand.bus.redis.LocalBusException} when Redis refuses.
 */
final class AppKeys {
  private static final int SCAN_BATCH = 500;

  private final ObjectMapper mapper;

  AppKeys(ObjectMapper mapper) {
    this.mapper = mapper;
  }

  /** Publishes {@code metadata} of {@code app}: from now on frontends invoke it. */
  void publish(RedisLocalBus bus, String app, ObjectNode metadata) {
    byte[] json;
    try {
      json = mapper.writeValueAsBytes(metadata);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot encode the metadata of '" + app + "'", e);
    }
    bus.set(Keys.app(app), json, null);
  }

  /** Withdraws the metadata of {@code app}: frontends no longer invoke it. */
  static void withdraw(RedisLocalBus bus, String app) {
    bus.delete(Keys.app(app));
  }

  /**
   * Deletes the readiness keys of {@code grains} (and what their workers said was broken), so only
   * workers started later count.
   */
  static void clearReady(RedisLocalBus bus, String app, List<String> grains) {
    bus.delete(
        grains.stream()
            .flatMap(g -> Stream.of(Keys.ready(app, g), Keys.broken(app, g)))
            .toArray(String[]::new));
  }

  /** Deletes every key {@code app} owns ({@link Keys#appOwnedPatterns}). */
  static void deleteOwned(RedisLocalBus bus, String app) {
    List<String> keys = new ArrayList<>();
    for (String pattern : Keys.appOwnedPatterns(app)) {
      keys.addAll(scan(bus, pattern));
    }
    bus.delete(keys.toArray(String[]::new));
  }

  private static List<String> scan(RedisLocalBus bus, String pattern) {
    return bus.call(
        "SCAN " + pattern,
        c -> {
          List<String> keys = new ArrayList<>();
          ScanIterator.scan(c, ScanArgs.Builder.matches(pattern).limit(SCAN_BATCH))
              .forEachRemaining(k -> keys.add(new String(k, StandardCharsets.UTF_8)));
          return keys;
        });
  }
}
