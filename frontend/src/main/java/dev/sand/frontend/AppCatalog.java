package dev.sand.frontend;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.contracts.Keys;
import dev.sand.service.JsonHttp;
import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * The deployed applications, read from {@code sand:app:<app>} with a short cache: an invocation
 * burst costs one GET per application per {@link #TTL}, and a redeploy or undeploy is seen within
 * it.
 *
 * <p>Thread-safe. {@link #find} blocks on Redis on a cache miss.
 */
final class AppCatalog {
  /** How long a read (hit or miss) is reused; the contract allows up to one second. */
  static final Duration TTL = Duration.ofMillis(500);

  private static final int MAX_ENTRIES = 4096;

  private record Entry(Optional<AppMetadata> app, long readAtNanos) {}

  private final RedisLocalBus bus;
  private final LongSupplier nanoTime;
  private final ConcurrentHashMap<String, Entry> cache = new ConcurrentHashMap<>();

  /**
   * @param nanoTime the ticker ({@code System::nanoTime}; tests inject their own)
   */
  AppCatalog(RedisLocalBus bus, LongSupplier nanoTime) {
    this.bus = bus;
    this.nanoTime = nanoTime;
  }

  /**
   * The metadata of {@code app} (a valid name, see {@link dev.sand.contracts.Names#requireApp});
   * empty when it is not deployed.
   *
   * @throws dev.sand.bus.redis.LocalBusException when Redis is unreachable
   * @throws IllegalStateException naming the key when the stored document is unusable
   */
  Optional<AppMetadata> find(String app) {
    long now = nanoTime.getAsLong();
    Entry cached = cache.get(app);
    if (cached != null && now - cached.readAtNanos() < TTL.toNanos()) {
      return cached.app();
    }
    String key = Keys.app(app);
    Optional<AppMetadata> found = bus.get(key).map(bytes -> parse(app, key, bytes));
    if (cache.size() >= MAX_ENTRIES) {
      // misses for made-up names must not grow the cache without bound
      cache.clear();
    }
    cache.put(app, new Entry(found, now));
    return found;
  }

  private static AppMetadata parse(String app, String key, byte[] bytes) {
    try {
      JsonNode doc = JsonHttp.MAPPER.readTree(bytes);
      return AppMetadata.parse(app, doc);
    } catch (IOException | IllegalArgumentException e) {
      throw new IllegalStateException(
          "application '" + app + "': metadata at " + key + " is unusable: " + e.getMessage(), e);
    }
  }
}
