package dev.sand.store;

import java.time.Instant;

/**
 * A deployed application as the global data layer keeps it (Cassandra table {@code apps}): enough
 * for any host to deploy it again after a restart, without the user.
 *
 * @param app its name
 * @param version the version deployed
 * @param archive the archive the user uploaded
 * @param options the deploy options (JSON, the host agent's format)
 * @param deployedAt when it was deployed
 */
public record AppRecord(
    String app, int version, byte[] archive, String options, Instant deployedAt) {}
