package dev.sand.frontend;

import dev.sand.contracts.Caller;
import dev.sand.contracts.Tokens;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Who a request comes from: its bearer token, looked up by its SHA-256 (decision 0017).
 *
 * <p>The hot path is one hash and one map lookup: a token seen in the last {@link #KNOWN_TTL} is
 * taken from the cache. A new one is looked up once (through a host agent, in the global data
 * layer); an unknown one is remembered as unknown for {@link #UNKNOWN_TTL}, so a client hammering
 * with a wrong token costs the data layer one read a second. Every change of users or tokens
 * flushes the cache of every frontend before it is answered ({@link #flush}), so a revoked token
 * stops working at once; the TTL bounds how long a frontend that missed a flush (unreachable at
 * that moment) could go on accepting one.
 *
 * <p>When a known token's entry has expired and the lookup is {@link Unavailable} (the data layer
 * restarting, or an agent's Cassandra session busy with the backlog it writes after one), the entry
 * is still served for {@link #STALE_IF_UNAVAILABLE}: a blip of the data layer does not refuse every
 * client whose token was just checked. A revocation cannot land meanwhile (it is a write to the
 * same data layer), and a flush still forgets the entry at once.
 *
 * <p>Thread-safe. {@link #authenticate} blocks on a cache miss.
 */
final class Authenticator {
  static final Duration KNOWN_TTL = Duration.ofSeconds(60);
  static final Duration UNKNOWN_TTL = Duration.ofSeconds(1);
  static final Duration STALE_IF_UNAVAILABLE = Duration.ofMinutes(2);
  private static final int MAX_ENTRIES = 10_000;
  private static final String BEARER = "Bearer ";

  /** Finds the caller whose token has {@code hash}; empty when no valid token has it. */
  interface Lookup {
    /**
     * @throws Unavailable when the lookup cannot be made now
     */
    Optional<Caller> find(String hash);
  }

  /** A request without a usable token: answered 401. */
  static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;

    Refused(String message) {
      super(message, null, false, false);
    }
  }

  /** The token could not be checked now (no host agent answers): answered 503. */
  static final class Unavailable extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Unavailable(String message) {
      super(message, null, false, false);
    }
  }

  private record Entry(Optional<Caller> caller, long untilNanos) {}

  private final Lookup lookup;
  private final LongSupplier nanoTime;
  private final ConcurrentHashMap<String, Entry> cache = new ConcurrentHashMap<>();
  // a lookup that started before a flush may have read what the flush was about: not cached
  private final AtomicLong generation = new AtomicLong();

  /**
   * @param nanoTime the ticker ({@code System::nanoTime}; tests inject their own)
   */
  Authenticator(Lookup lookup, LongSupplier nanoTime) {
    this.lookup = lookup;
    this.nanoTime = nanoTime;
  }

  /**
   * The caller of a request whose {@code Authorization} header is {@code authorization} (null when
   * absent).
   *
   * @throws Refused saying what is wrong with the header or the token
   * @throws Unavailable when the token is not cached (or its entry expired longer than {@link
   *     #STALE_IF_UNAVAILABLE} ago) and cannot be looked up now
   */
  Caller authenticate(String authorization) throws Refused {
    if (authorization == null || authorization.isBlank()) {
      throw new Refused(
          "this API needs a token: send 'Authorization: Bearer <token>'"
              + " (`sand login` signs the CLI in)");
    }
    if (!authorization.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
      throw new Refused("the Authorization header must be 'Bearer <token>'");
    }
    String token = authorization.substring(BEARER.length()).strip();
    if (!Tokens.wellFormed(token)) {
      throw new Refused("the token is not valid (unknown, revoked or expired)");
    }
    String hash = Tokens.hash(token);
    long now = nanoTime.getAsLong();
    Entry cached = cache.get(hash);
    if (cached == null || now - cached.untilNanos() >= 0) {
      long before = generation.get();
      Optional<Caller> found;
      try {
        found = lookup.find(hash);
      } catch (Unavailable e) {
        if (cached != null
            && cached.caller().isPresent()
            && now - cached.untilNanos() < STALE_IF_UNAVAILABLE.toNanos()) {
          return cached.caller().get();
        }
        throw e;
      }
      Duration ttl = found.isPresent() ? KNOWN_TTL : UNKNOWN_TTL;
      cached = new Entry(found, now + ttl.toNanos());
      if (cache.size() >= MAX_ENTRIES) {
        cache.clear();
      }
      cache.put(hash, cached);
      if (generation.get() != before) {
        cache.remove(hash, cached);
      }
    }
    return cached
        .caller()
        .orElseThrow(() -> new Refused("the token is not valid (unknown, revoked or expired)"));
  }

  /** Forgets every token: the next request of each is looked up again. */
  void flush() {
    generation.incrementAndGet();
    cache.clear();
  }
}
