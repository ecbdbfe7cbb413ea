package dev.sand.config;

import static dev.sand.config.ClusterDocuments.VALID;
import static dev.sand.config.ClusterDocuments.withSandbox;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * The optional keys of cluster.json (tracing, admission, the retention and replication of execution
 * records, the sandbox limits): without them the defaults, with them their values, a bad value
 * refused naming the key.
 */
class ClusterConfigOptionalKeysTest {
  /** Without a tracing section nothing is exported; with one, its endpoint is read. */
  @Test
  void parse_tracing_optionalEndpoint() {
    assertThat(ClusterConfig.parse(VALID).tracing()).isEqualTo(TracingConfig.OFF);
    String json =
        VALID.replace(
            "\"host_id\"",
            "\"tracing\": {\"otlp_endpoint\": \"http://127.0.0.1:4318/v1/traces\"}, \"host_id\"");
    assertThat(ClusterConfig.parse(json).tracing().otlpEndpoint())
        .contains(java.net.URI.create("http://127.0.0.1:4318/v1/traces"));
    String off =
        VALID.replace("\"host_id\"", "\"tracing\": {\"otlp_endpoint\": \"\"}, \"host_id\"");
    assertThat(ClusterConfig.parse(off).tracing()).isEqualTo(TracingConfig.OFF);
  }

  /** An endpoint that is not an http(s) URL is refused, naming the key and the value. */
  @Test
  void parse_tracing_badEndpoint_namesIt() {
    String json =
        VALID.replace(
            "\"host_id\"", "\"tracing\": {\"otlp_endpoint\": \"ftp://x/y\"}, \"host_id\"");
    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("otlp_endpoint")
        .hasMessageContaining("ftp://x/y");
  }

  /** Without an admission section a host takes the default bounds; with one, its values. */
  @Test
  void parse_admission_optionalBounds() {
    assertThat(ClusterConfig.parse(VALID).admission()).isEqualTo(AdmissionConfig.DEFAULT);
    String json =
        VALID.replace(
            "\"host_id\"",
            "\"admission\": {\"max_queued_per_app\": 4, \"max_queued_per_host\": 10,"
                + " \"retry_after_s\": 3}, \"host_id\"");
    assertThat(ClusterConfig.parse(json).admission())
        .isEqualTo(new AdmissionConfig(4, 10, 3, false));
  }

  /** A bound out of range is refused naming the section, the key and the value. */
  @Test
  void parse_admission_badBound_namesKeyAndValue() {
    String zero =
        VALID.replace(
            "\"host_id\"",
            "\"admission\": {\"max_queued_per_app\": 0, \"max_queued_per_host\": 10,"
                + " \"retry_after_s\": 1}, \"host_id\"");
    assertThatThrownBy(() -> ClusterConfig.parse(zero))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("admission.max_queued_per_app")
        .hasMessageContaining("got 0");
    String below =
        VALID.replace(
            "\"host_id\"",
            "\"admission\": {\"max_queued_per_app\": 8, \"max_queued_per_host\": 4,"
                + " \"retry_after_s\": 1}, \"host_id\"");
    assertThatThrownBy(() -> ClusterConfig.parse(below))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("admission.max_queued_per_host")
        .hasMessageContaining("got 4");
    String retry =
        VALID.replace(
            "\"host_id\"",
            "\"admission\": {\"max_queued_per_app\": 8, \"max_queued_per_host\": 8,"
                + " \"retry_after_s\": 0}, \"host_id\"");
    assertThatThrownBy(() -> ClusterConfig.parse(retry))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("admission.retry_after_s");
  }

  /** The retention of execution records is read in days and used as a TTL in seconds. */
  @Test
  void parse_executionRetention_readsDays() {
    ClusterConfig config =
        ClusterConfig.parse(
            VALID.replace(
                "\"keyspace\": \"sand\"",
                "\"keyspace\": \"sand\", \"execution_retention_days\": 7"));

    assertThat(config.cassandra().retentionDays()).isEqualTo(7);
    assertThat(config.cassandra().retentionSeconds()).isEqualTo(7 * 86_400);
  }

  /** A retention of zero days would drop every record at once: refused, naming the key. */
  @Test
  void parse_zeroRetention_namesKey() {
    assertThatThrownBy(
            () ->
                ClusterConfig.parse(
                    VALID.replace(
                        "\"keyspace\": \"sand\"",
                        "\"keyspace\": \"sand\", \"execution_retention_days\": 0")))
        .hasMessageContaining("cassandra.execution_retention_days")
        .hasMessageContaining("must be 1..3650, got 0");
  }

  /** One node unless cluster.json asks for replicas; a replicated keyspace reads by quorum. */
  @Test
  void parse_replicationFactor_readOrOne() {
    assertThat(ClusterConfig.parse(VALID).cassandra().replicationFactor()).isEqualTo(1);
    assertThat(ClusterConfig.parse(VALID).cassandra().replicated()).isFalse();

    CassandraConfig three =
        ClusterConfig.parse(
                VALID.replace(
                    "\"keyspace\": \"sand\"", "\"keyspace\": \"sand\", \"replication_factor\": 3"))
            .cassandra();

    assertThat(three.replicationFactor()).isEqualTo(3);
    assertThat(three.replicated()).isTrue();
  }

  /** More replicas than a cluster can have hosts: refused, naming the key and the bound. */
  @Test
  void parse_replicationFactorAboveTheMostHosts_namesKey() {
    assertThatThrownBy(
            () ->
                ClusterConfig.parse(
                    VALID.replace(
                        "\"keyspace\": \"sand\"",
                        "\"keyspace\": \"sand\", \"replication_factor\": 9")))
        .hasMessageContaining("cassandra.replication_factor")
        .hasMessageContaining("must be 1..8, got 9");
  }

  /** The sandbox limits of decision 0022 are read; a file without them gets the defaults. */
  @Test
  void parse_sandboxLimits_readOrDefaulted() {
    String withLimits =
        withSandbox(
            """
            {"backend": "process", "base_image": "img", "python": "/usr/bin/python3",
             "source_dirs": [], "site_dir": "/site", "cpus": 1.0, "pids_limit": 64,
             "cpu_weight": 50, "max_cpu_weight": 200, "memory_mb": 256, "max_memory_mb": 1024,
             "max_sandbox_memory_mb": 2048}
            """);

    assertThat(ClusterConfig.parse(withLimits).sandbox().limits())
        .isEqualTo(new SandboxConfig.Limits(50, 200, 256, 1024, 2048));
    assertThat(ClusterConfig.parse(VALID).sandbox().limits())
        .isEqualTo(SandboxConfig.Limits.DEFAULT);
  }

  /** A default weight above the maximum is refused at start-up, naming the key and both. */
  @Test
  void parse_cpuWeightAboveItsMaximum_namesKeyAndValues() {
    String bad =
        withSandbox(
            """
            {"backend": "process", "base_image": "img", "python": "/usr/bin/python3",
             "source_dirs": [], "site_dir": "/site", "cpus": 1.0, "pids_limit": 64,
             "cpu_weight": 300, "max_cpu_weight": 200}
            """);

    assertThatThrownBy(() -> ClusterConfig.parse(bad))
        .hasMessageContaining("sandbox.max_cpu_weight")
        .hasMessageContaining("must be from cpu_weight (300) to 10000, got 200");
  }
}
