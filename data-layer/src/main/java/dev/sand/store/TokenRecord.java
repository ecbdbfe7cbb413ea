package dev.sand.store;

import java.time.Instant;

/**
 * A token as it is listed (Cassandra table {@code tokens}, decision 0017): never the token itself,
 * which is shown once when it is made and stored only as its SHA-256.
 *
 * @param id its public id ({@code tok_...}), used to revoke it
 * @param user whose it is
 * @param label what its owner called it (may be empty)
 * @param created when it was made
 * @param expires when it stops working, or {@code null} for never
 */
public record TokenRecord(String id, String user, String label, Instant created, Instant expires) {
  /** Whether the token no longer works at {@code now}. */
  public boolean expiredAt(Instant now) {
    return expires != null && !now.isBefore(expires);
  }
}
