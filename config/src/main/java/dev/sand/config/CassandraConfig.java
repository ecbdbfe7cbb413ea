package dev.sand.config;

import java.util.regex.Pattern;

/**
 * The global data layer.
 *
 * @param contactPoint one node to discover the cluster from ({@code cassandra.contact_point})
 * @param datacenter the local datacenter name the driver routes to ({@code cassandra.datacenter})
 * @param keyspace SAND's keyspace ({@code cassandra.keyspace}); a plain lower-case CQL identifier
 */
public record CassandraConfig(HostPort contactPoint, String datacenter, String keyspace) {
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
  }
}
