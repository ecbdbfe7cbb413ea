package dev.sand.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ClusterConfigTest {
  static final String VALID =
      """
      {"state_dir": "/abs/state", "host_id": "host-1",
       "redis": {"socket": "/abs/state/run/redis.sock"},
       "kafka": {"bootstrap": "127.0.0.1:19092"},
       "cassandra": {"contact_point": "127.0.0.1:19042", "datacenter": "datacenter1",
                     "keyspace": "sand"},
       "docker": {"host": "unix:///abs/state/run/docker.sock", "enabled": true},
       "frontend": {"ports": [18081, 18082], "max_payload_kb": 256},
       "host_agent": {"port": 18090},
       "nginx": {"port": 18080}}
      """;

  /** The file `sand up` writes parses into typed values. */
  @Test
  void parse_validFile_readsEveryKey() {
    ClusterConfig config = ClusterConfig.parse(VALID);

    assertThat(config.stateDir()).isEqualTo(Path.of("/abs/state"));
    assertThat(config.hostId()).isEqualTo("host-1");
    assertThat(config.redis().socket()).isEqualTo(Path.of("/abs/state/run/redis.sock"));
    assertThat(config.kafka().bootstrapServers()).isEqualTo("127.0.0.1:19092");
    assertThat(config.cassandra().contactPoint()).isEqualTo(new HostPort("127.0.0.1", 19042));
    assertThat(config.cassandra().datacenter()).isEqualTo("datacenter1");
    assertThat(config.cassandra().keyspace()).isEqualTo("sand");
    assertThat(config.cassandra().retentionDays())
        .isEqualTo(CassandraConfig.DEFAULT_RETENTION_DAYS);
    assertThat(config.docker().host()).isEqualTo(URI.create("unix:///abs/state/run/docker.sock"));
    assertThat(config.docker().enabled()).isTrue();
    assertThat(config.frontend().ports()).containsExactly(18081, 18082);
    assertThat(config.frontend().maxPayloadBytes()).isEqualTo(256 * 1024);
    assertThat(config.hostAgent().port()).isEqualTo(18090);
    assertThat(config.nginx().port()).isEqualTo(18080);
  }

  /** Keys this side does not know are ignored, so other processes can add their own. */
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

  @Test
  void parse_unknownKeys_areIgnored() {
    String json = VALID.replace("\"host_id\"", "\"extra\": {\"x\": 1}, \"host_id\"");

    assertThat(ClusterConfig.parse(json).hostId()).isEqualTo("host-1");
  }

  /** A missing nested key is named by its full dotted path. */
  @Test
  void parse_missingNestedKey_namesIt() {
    String json = VALID.replace("\"socket\": \"/abs/state/run/redis.sock\"", "\"sock\": \"/x\"");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .isInstanceOf(ConfigException.class)
        .hasMessage("key 'redis.socket' is required")
        .extracting(e -> ((ConfigException) e).key())
        .isEqualTo("redis.socket");
  }

  /** A missing section is named. */
  @Test
  void parse_missingSection_namesIt() {
    String json = VALID.replace("\"nginx\": {\"port\": 18080}", "\"nginy\": {}");

    assertThatThrownBy(() -> ClusterConfig.parse(json)).hasMessage("key 'nginx' is required");
  }

  /** A value of the wrong type is named with what was found. */
  @Test
  void parse_wrongType_namesKeyAndValue() {
    String json = VALID.replace("\"port\": 18090", "\"port\": \"18090\"");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessage("key 'host_agent.port' must be an integer, got string \"18090\"");
  }

  /** The GUI's directory: as given, else under {@code home}, else none (then /ui/ says so). */
  @Test
  void parse_uiDir_givenOrDerivedFromHome() {
    assertThat(ClusterConfig.parse(VALID).frontend().uiDir()).isNull();
    String withHome = VALID.replace("\"host_id\"", "\"home\": \"/abs/sand\", \"host_id\"");
    assertThat(ClusterConfig.parse(withHome).frontend().uiDir())
        .isEqualTo(Path.of("/abs/sand/frontend/ui/dist"));
    String given =
        withHome.replace(
            "\"max_payload_kb\": 256", "\"max_payload_kb\": 256, \"ui_dir\": \"/srv/gui\"");
    assertThat(ClusterConfig.parse(given).frontend().uiDir()).isEqualTo(Path.of("/srv/gui"));
  }

  /** A relative GUI directory is refused, naming the key and the value. */
  @Test
  void parse_relativeUiDir_namesKeyAndValue() {
    String json =
        VALID.replace("\"max_payload_kb\": 256", "\"max_payload_kb\": 256, \"ui_dir\": \"dist\"");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessage("key 'frontend.ui_dir' must be an absolute path, got 'dist'");
  }

  /** An out-of-range list element is named with its index. */
  @Test
  void parse_badPortInList_namesIndex() {
    String json = VALID.replace("[18081, 18082]", "[18081, 70000]");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessage("key 'frontend.ports[1]' must be a TCP port 1..65535, got 70000");
  }

  /** A malformed endpoint is named with its value. */
  @Test
  void parse_badContactPoint_namesKeyAndValue() {
    String json = VALID.replace("127.0.0.1:19042", "localhost");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessage("key 'cassandra.contact_point' must be host:port, got 'localhost'");
  }

  /** Docker must be a unix socket or TCP address. */
  @Test
  void parse_badDockerHost_namesKey() {
    String json = VALID.replace("unix:///abs/state/run/docker.sock", "http://x");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessageStartingWith(
            "key 'docker.host' must be unix:///absolute/path or tcp://host:port");
  }

  /** A host id that cannot appear in keys and labels is refused. */
  @Test
  void parse_badHostId_namesKey() {
    String json = VALID.replace("\"host-1\"", "\"host:1\"");

    assertThatThrownBy(() -> ClusterConfig.parse(json)).hasMessageStartingWith("key 'host_id' ");
  }

  /** Relative paths are refused: processes start from different working directories. */
  @Test
  void parse_relativeStateDir_isRefused() {
    String json = VALID.replace("\"/abs/state\"", "\"state\"");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessage("key 'state_dir' must be an absolute path, got 'state'");
  }

  /** Duplicate keys are refused instead of silently taking the last. */
  @Test
  void parse_duplicateKey_isRefused() {
    String json =
        VALID.replace("\"host_id\": \"host-1\"", "\"host_id\": \"a\", \"host_id\": \"b\"");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("is not valid JSON")
        .hasMessageContaining("host_id");
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

  /** The sandbox limits of decision 0022 are read; a file without them gets the defaults. */
  @Test
  void parse_sandboxLimits_readOrDefaulted() {
    String sandbox =
        """
        , "sandbox": {"backend": "process", "base_image": "img", "python": "/usr/bin/python3",
          "source_dirs": [], "site_dir": "/site", "cpus": 1.0, "pids_limit": 64,
          "cpu_weight": 50, "max_cpu_weight": 200, "memory_mb": 256, "max_memory_mb": 1024,
          "max_sandbox_memory_mb": 2048}}
        """;
    String withLimits = VALID.strip().substring(0, VALID.strip().length() - 1) + sandbox;

    assertThat(ClusterConfig.parse(withLimits).sandbox().limits())
        .isEqualTo(new SandboxConfig.Limits(50, 200, 256, 1024, 2048));
    assertThat(ClusterConfig.parse(VALID).sandbox().limits())
        .isEqualTo(SandboxConfig.Limits.DEFAULT);
  }

  /** A default weight above the maximum is refused at start-up, naming the key and both. */
  @Test
  void parse_cpuWeightAboveItsMaximum_namesKeyAndValues() {
    String sandbox =
        """
        , "sandbox": {"backend": "process", "base_image": "img", "python": "/usr/bin/python3",
          "source_dirs": [], "site_dir": "/site", "cpus": 1.0, "pids_limit": 64,
          "cpu_weight": 300, "max_cpu_weight": 200}}
        """;
    String bad = VALID.strip().substring(0, VALID.strip().length() - 1) + sandbox;

    assertThatThrownBy(() -> ClusterConfig.parse(bad))
        .hasMessageContaining("sandbox.max_cpu_weight")
        .hasMessageContaining("must be from cpu_weight (300) to 10000, got 200");
  }

  /** load() prefixes every problem with the file, so the operator knows where to look. */
  @Test
  void load_badKey_namesFileAndKey(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("cluster.json");
    Files.writeString(file, VALID.replace("\"keyspace\": \"sand\"", "\"keyspace\": \"Sand-1\""));

    assertThatThrownBy(() -> ClusterConfig.load(file))
        .hasMessage(
            file + ": key 'cassandra.keyspace' must match [a-z][a-z0-9_]{0,47}, got 'Sand-1'");
  }

  /** A missing file is reported with its path. */
  @Test
  void load_missingFile_namesFile(@TempDir Path dir) {
    Path file = dir.resolve("nope.json");

    assertThatThrownBy(() -> ClusterConfig.load(file))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith(file + ": cannot be read");
  }

  /** Several brokers are accepted, comma-separated. */
  @Test
  void parse_severalBrokers_keepsOrder() {
    String json = VALID.replace("127.0.0.1:19092", "a:1, b:2");

    assertThat(ClusterConfig.parse(json).kafka().bootstrap())
        .isEqualTo(List.of(new HostPort("a", 1), new HostPort("b", 2)));
  }

  /** Without a bind address the agent listens on loopback, as before the key existed. */
  @Test
  void parse_noBind_defaultsToLoopback() {
    assertThat(ClusterConfig.parse(VALID).hostAgent().bind()).isEqualTo("127.0.0.1");
  }

  /** An agent in a network namespace of its own listens on that namespace's address. */
  @Test
  void parse_bind_isRead() {
    String json = VALID.replace("\"port\": 18090", "\"port\": 18090, \"bind\": \"10.213.7.11\"");

    assertThat(ClusterConfig.parse(json).hostAgent().bind()).isEqualTo("10.213.7.11");
  }

  /** A bind address that is not an IPv4 literal is named with its value. */
  @Test
  void parse_badBind_namesKeyAndValue() {
    for (String bad : new String[] {"localhost", "10.213.7.256", "10.213.7", "::1", ""}) {
      String json = VALID.replace("\"port\": 18090", "\"port\": 18090, \"bind\": \"" + bad + "\"");

      assertThatThrownBy(() -> ClusterConfig.parse(json))
          .hasMessage(
              "key 'host_agent.bind' must be an IPv4 address like 127.0.0.1, got '" + bad + "'");
    }
  }

  /** A file without a host list describes one host: itself, its agent on loopback. */
  @Test
  void parse_noHosts_derivesThisHost() {
    assertThat(ClusterConfig.parse(VALID).hosts())
        .containsExactly(
            new HostEntry(
                "host-1",
                Path.of("/abs/state/run/redis.sock"),
                URI.create("http://127.0.0.1:18090")));
  }

  /** The host list is read in order, each entry typed. */
  @Test
  void parse_hosts_readsEveryEntry() {
    String json =
        VALID.replace(
            "\"nginx\": {\"port\": 18080}",
            """
            "nginx": {"port": 18080},
            "hosts": [
              {"id": "host-1", "redis_socket": "/s/hosts/host-1/run/redis/redis.sock",
               "agent_url": "http://10.213.7.11:18090"},
              {"id": "host-2", "redis_socket": "/s/hosts/host-2/run/redis/redis.sock",
               "agent_url": "http://10.213.7.12:18090"}]""");

    assertThat(ClusterConfig.parse(json).hosts())
        .containsExactly(
            new HostEntry(
                "host-1",
                Path.of("/s/hosts/host-1/run/redis/redis.sock"),
                URI.create("http://10.213.7.11:18090")),
            new HostEntry(
                "host-2",
                Path.of("/s/hosts/host-2/run/redis/redis.sock"),
                URI.create("http://10.213.7.12:18090")));
  }

  /** A bad entry is named by its index and key. */
  @Test
  void parse_badHostEntry_namesIndexAndKey() {
    String json =
        VALID.replace(
            "\"nginx\": {\"port\": 18080}",
            """
            "nginx": {"port": 18080},
            "hosts": [
              {"id": "host-1", "redis_socket": "/r.sock", "agent_url": "http://10.0.0.1:1"},
              {"id": "host-2", "redis_socket": "relative.sock", "agent_url": "http://x:1"}]""");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessage("key 'hosts[1].redis_socket' must be an absolute path, got 'relative.sock'");
  }

  /** An agent URL without a port is refused. */
  @Test
  void parse_agentUrlWithoutPort_isRefused() {
    String json =
        VALID.replace(
            "\"nginx\": {\"port\": 18080}",
            """
            "nginx": {"port": 18080},
            "hosts": [{"id": "host-1", "redis_socket": "/r.sock", "agent_url": "http://x"}]""");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessage("key 'hosts[0].agent_url' must be http://host:port, got 'http://x'");
  }

  /** Two hosts with one id would share keys and labels: refused. */
  @Test
  void parse_duplicateHostIds_areRefused() {
    String json =
        VALID.replace(
            "\"nginx\": {\"port\": 18080}",
            """
            "nginx": {"port": 18080},
            "hosts": [
              {"id": "host-1", "redis_socket": "/a.sock", "agent_url": "http://10.0.0.1:1"},
              {"id": "host-1", "redis_socket": "/b.sock", "agent_url": "http://10.0.0.2:1"}]""");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessage("key 'hosts[1].id' must be unique, got 'host-1' twice");
  }

  /** An empty host list is refused: the frontends would have nowhere to send events. */
  @Test
  void parse_emptyHosts_isRefused() {
    String json =
        VALID.replace(
            "\"nginx\": {\"port\": 18080}", "\"nginx\": {\"port\": 18080}, \"hosts\": []");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessage("key 'hosts' must list at least one host");
  }

  /** Without Docker there is no engine address to check (docker.mode = "off"). */
  @Test
  void parse_dockerDisabledWithoutHost_isAccepted() {
    String json =
        VALID.replace(
            "\"host\": \"unix:///abs/state/run/docker.sock\", \"enabled\": true",
            "\"host\": \"\", \"enabled\": false");

    assertThat(ClusterConfig.parse(json).docker().enabled()).isFalse();
  }
}
