package dev.sand.store;

import java.time.Instant;

/**
 * A user (Cassandra table {@code users}, decision 0017).
 *
 * @param name the user name
 * @param role {@code admin} or {@code user}
 * @param created when the user was made
 */
public record UserRecord(String name, String role, Instant created) {}
