package dev.sand.config;

import dev.sand.contracts.contractsConstants;
import java.util.regex.Pattern;

/**
 * The global data layer.
 *
 * @param contactPoint one node to discover the cluster from ({@code cassandra.contact_point})
 * @param datacenter the local datacenter name the driver routes to ({@code cassandra.datacenter})
 * @param keyspace SAND's keyspace ({@code cassandra.keyspace}); a plain lower-case CQL identifier
 * @param retentionDays how long execution records, their history and their names are kept ({@code
 *     cassandra.execution_retention_days}, from {@code [executions] retention_days}), 1..3650
 * @param replicationFactor how many nodes keep each row of SAND's keyspace ({@code
 *     cassandra.replication_factor}): 1 on a single node; 3 on a replicated cluster (decision
 *     0042), where every read and write then waits for a quorum of the local datacenter
 */
public record CassandraConfig(
    HostPort contactPoint,
    String datacenter,
    String keyspace,
    int retentionDays,
    int replicationFactor) {
  /** The retention of execution records when the configuration names none. */
  public static final int DEFAULT_RETENTION_DAYS = 30;

  /** The longest retention accepted: ten years (Cassandra's TTL limit is about 20). */
  public static final int MAX_RETENTION_DAYS = contractsConstants.CONFIG_MAX_RETENTION_DAYS;

  /** The most replicas asked of the keyspace: one per host of the largest cluster (8). */
  public static final int MAX_REPLICATION_FACTOR = contractsConstants.CONFIG_MAX_HOSTS;

  // unquoted CQL identifiers fold to lower case; allowing only these avoids quoting everywhere
  private static final Pattern KEYSPACE = Pattern.compile("[a-z][a-z0-9_]{0,47}");

  public CassandraConfig {
    if (contactPoint == null) {
      throw ConfigException.invalid("contact_point", "is required");
    }
    Checks.nonBlank("datacenter", datacenter);
    if (keyspace == null || !KEYSPACE.matcher(keyspace).matches()) {
      throw ConfigException.invalid(
          "keyspace", "must match [a-z][a-z0-9_]{0,47}, got '" + keyspace + "'");
    }
    if (retentionDays < 1 || retentionDays > MAX_RETENTION_DAYS) {
      throw ConfigException.invalid(
          "execution_retention_days",
          "must be 1.." + MAX_RETENTION_DAYS + ", got " + retentionDays);
    }
    if (replicationFactor < 1 || replicationFactor > MAX_REPLICATION_FACTOR) {
      throw ConfigException.invalid(
          "replication_factor",
          "must be 1.." + MAX_REPLICATION_FACTOR + ", got " + replicationFactor);
    }
  }

  /** A single node's configuration with the default retention of execution records. */
  public CassandraConfig(HostPort contactPoint, String datacenter, String keyspace) {
    this(contactPoint, datacenter, keyspace, DEFAULT_RETENTION_DAYS, 1);
  }

  /** Whether rows are replicated: reads and writes then wait for a local quorum of replicas. */
  public boolean replicated() {
    return replicationFactor > 1;
  }

  /** The retention in seconds: the TTL of every execution row, history event and name. */
  public int retentionSeconds() {
    return retentionDays * 86_400;
  }
}
