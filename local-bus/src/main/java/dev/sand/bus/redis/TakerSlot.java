package dev.sand.bus.redis;

/**
 * The {@link RedisLocalBus.Taker} of a loop that takes from Redis until it is stopped: opened when
 * first needed and closed after a failed take, so that the next round opens a fresh connection
 * instead of retrying on one Redis may have dropped. Not thread-safe: one loop's thread, as the
 * taker.
 */
public final class TakerSlot implements AutoCloseable {
  private RedisLocalBus.Taker taker;

  /** The open taker, opened on {@code bus} when there is none. */
  public RedisLocalBus.Taker on(RedisLocalBus bus) {
    if (taker == null) {
      taker = bus.taker();
    }
    return taker;
  }

  /** Closes the taker, when one is open; the next {@link #on} opens another. */
  @Override
  public void close() {
    if (taker != null) {
      taker.close();
      taker = null;
    }
  }
}
