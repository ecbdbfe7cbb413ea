package dev.sand.config;

import static dev.sand.config.ClusterDocuments.VALID;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reading cluster.json ({@link ClusterDocuments#VALID}): every key typed, keys this side does not
 * know ignored, and each problem named by its key (and by the file, for {@code load}).
 */
class ClusterConfigTest {
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

  /** Relative paths are refused: processes start from different working directories. */
  @Test
  void parse_relativeStateDir_isRefused() {
    String json = VALID.replace("\"/abs/state\"", "\"state\"");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessage("key 'state_dir' must be an absolute path, got 'state'");
  }

  /** A host id that cannot appear in keys and labels is refused. */
  @Test
  void parse_badHostId_namesKey() {
    String json = VALID.replace("\"host-1\"", "\"host:1\"");

    assertThatThrownBy(() -> ClusterConfig.parse(json)).hasMessageStartingWith("key 'host_id' ");
  }

  /** Several brokers are accepted, comma-separated. */
  @Test
  void parse_severalBrokers_keepsOrder() {
    String json = VALID.replace("127.0.0.1:19092", "a:1, b:2");

    assertThat(ClusterConfig.parse(json).kafka().bootstrap())
        .isEqualTo(List.of(new HostPort("a", 1), new HostPort("b", 2)));
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

  /** Without Docker there is no engine address to check (docker.mode = "off"). */
  @Test
  void parse_dockerDisabledWithoutHost_isAccepted() {
    String json =
        VALID.replace(
            "\"host\": \"unix:///abs/state/run/docker.sock\", \"enabled\": true",
            "\"host\": \"\", \"enabled\": false");

    assertThat(ClusterConfig.parse(json).docker().enabled()).isFalse();
  }

  /** An out-of-range list element is named with its index. */
  @Test
  void parse_badPortInList_namesIndex() {
    String json = VALID.replace("[18081, 18082]", "[18081, 70000]");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessage("key 'frontend.ports[1]' must be a TCP port 1..65535, got 70000");
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
}
