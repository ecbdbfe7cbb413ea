package dev.sand.store;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * What the global data layer knows about one key without its value: the metadata a grain instance's
 * FINISHED flag carries (SAND paper §4) and recovery compares with Cassandra.
 *
 * @param key the application's key
 * @param size the stored value's length in bytes; -1 for a deleted (absent) key
 * @param sha256 the SHA-256 of the stored value (32 bytes); empty for a deleted key
 */
public record DataEntry(String key, int size, byte[] sha256) {
  public DataEntry {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(sha256, "sha256");
    if (size < -1) {
      throw new IllegalArgumentException(
          "data entry '" + key + "': size must be >= -1, got " + size);
    }
    if ((size == -1) != (sha256.length == 0) || (size >= 0 && sha256.length != 32)) {
      throw new IllegalArgumentException(
          "data entry '" + key + "': a present key has a 32-byte sha256, a deleted one none");
    }
    sha256 = sha256.clone();
  }

  /** The entry of a key that was deleted (must be absent). */
  public static DataEntry deleted(String key) {
    return new DataEntry(key, -1, new byte[0]);
  }

  /** Whether this entry says the key was deleted. */
  public boolean isDeleted() {
    return size == -1;
  }

  @Override
  public byte[] sha256() {
    return sha256.clone();
  }

  /** The hash in lower-case hex ("" for a deleted key), as the flag header spells it. */
  public String sha256Hex() {
    return HexFormat.of().formatHex(sha256);
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof DataEntry that
        && key.equals(that.key)
        && size == that.size
        && Arrays.equals(sha256, that.sha256);
  }

  @Override
  public int hashCode() {
    return Objects.hash(key, size, Arrays.hashCode(sha256));
  }

  @Override
  public String toString() {
    return "DataEntry[key=" + key + ", size=" + size + ", sha256=" + sha256Hex() + "]";
  }
}
