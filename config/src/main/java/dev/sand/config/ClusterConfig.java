package dev.sand.config;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.sand.contracts.Names;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The configuration every SAND process of one host reads: {@code STATE/conf/cluster.json}, written
 * by {@code sand up}. Validated once, at start-up, into immutable values; a process that starts has
 * a config that passed every check here.
 *
 * <p>Example (keys not listed below are ignored):
 *
 * <pre>{@code
 * {"state_dir": "/abs/state", "host_id": "host-1",
 *  "redis": {"socket": "/abs/state/run/redis.sock"},
 *  "kafka": {"bootstrap": "127.0.0.1:19092"},
 *  "cassandra": {"contact_point": "127.0.0.1:19042", "datacenter": "datacenter1",
 *                "keyspace": "sand"},
 *  "docker": {"host": "unix:///abs/state/run/docker.sock", "enabled": true},
 *  "frontend": {"ports": [18081, 18082], "max_payload_kb": 256},
 *  "host_agent": {"port": 18090},
 *  "nginx": {"port": 18080}}
 * }</pre>
 *
 * @param stateDir absolute directory of the cluster's state ({@code state_dir})
 * @param hostId this host's id, unique in the cluster ({@code host_id}); labels its containers
 */
public record ClusterConfig(
    Path stateDir,
    String hostId,
    RedisConfig redis,
    KafkaConfig kafka,
    CassandraConfig cassandra,
    DockerConfig docker,
    FrontendConfig frontend,
    HostAgentConfig hostAgent,
    NginxConfig nginx,
    SandboxConfig sandbox) {

  // duplicate keys are almost always an editing mistake; refuse them instead of taking the last
  private static final JsonMapper MAPPER =
      JsonMapper.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();

  public ClusterConfig {
    stateDir = Checks.absolute("state_dir", stateDir);
    try {
      Names.requireHostId(hostId);
    } catch (IllegalArgumentException e) {
      throw ConfigException.invalid("host_id", e.getMessage());
    }
    requirePresent("redis", redis);
    requirePresent("kafka", kafka);
    requirePresent("cassandra", cassandra);
    requirePresent("docker", docker);
    requirePresent("frontend", frontend);
    requirePresent("host_agent", hostAgent);
    requirePresent("nginx", nginx);
    requirePresent("sandbox", sandbox);
  }

  /**
   * Reads and validates {@code file}. Blocking (reads the file).
   *
   * @throws ConfigException naming the file and the key when the file is unreadable, not JSON, or a
   *     required key is missing or invalid
   */
  public static ClusterConfig load(Path file) {
    String text;
    try {
      text = Files.readString(file);
    } catch (IOException e) {
      throw ConfigException.unreadable(file, "cannot be read: " + e, e);
    }
    try {
      return parse(text);
    } catch (ConfigException e) {
      throw e.inFile(file);
    }
  }

  /**
   * Validates the JSON document {@code json} (the content of a config file).
   *
   * @throws ConfigException naming the key when the document is not valid
   */
  public static ClusterConfig parse(String json) {
    JsonNode root;
    try {
      root = MAPPER.readTree(json);
    } catch (JacksonException e) {
      throw ConfigException.unreadable(null, "is not valid JSON: " + e.getOriginalMessage(), e);
    }
    if (root == null || !root.isObject()) {
      throw ConfigException.unreadable(null, "must hold a JSON object", null);
    }
    Section top = new Section(root);
    return new ClusterConfig(
        Path.of(top.text("state_dir")),
        top.text("host_id"),
        top.section(
            "redis",
            s ->
                new RedisConfig(
                    Path.of(s.text("socket")), s.has("password") ? s.text("password") : "")),
        top.section("kafka", s -> KafkaConfig.parse(s.text("bootstrap"))),
        top.section(
            "cassandra",
            s ->
                new CassandraConfig(
                    HostPort.parse("contact_point", s.text("contact_point")),
                    s.text("datacenter"),
                    s.text("keyspace"))),
        top.section(
            "docker", s -> new DockerConfig(uri("host", s.text("host")), s.bool("enabled"))),
        top.section(
            "frontend", s -> new FrontendConfig(s.integers("ports"), s.integer("max_payload_kb"))),
        top.section("host_agent", s -> new HostAgentConfig(s.integer("port"))),
        top.section("nginx", s -> new NginxConfig(s.integer("port"))),
        sandbox(top));
  }

  // Optional: older config files (and tests) without it get Docker when enabled, else processes.
  private static SandboxConfig sandbox(Section top) {
    boolean docker = top.section("docker", s -> s.bool("enabled"));
    if (!top.has("sandbox")) {
      return new SandboxConfig(
          docker ? SandboxConfig.Backend.DOCKER : SandboxConfig.Backend.PROCESS,
          "sand-base:bookworm-1",
          Path.of("python3"),
          List.of(),
          null,
          1.0,
          512);
    }
    return top.section(
        "sandbox",
        s ->
            new SandboxConfig(
                docker
                    ? SandboxConfig.Backend.parse(s.text("backend"))
                    : SandboxConfig.Backend.PROCESS,
                s.text("base_image"),
                Path.of(s.text("python")),
                s.texts("source_dirs").stream().map(Path::of).toList(),
                Path.of(s.text("site_dir")),
                s.number("cpus"),
                s.integer("pids_limit")));
  }

  private static URI uri(String key, String text) {
    try {
      return new URI(text);
    } catch (URISyntaxException e) {
      throw ConfigException.invalid(key, "must be a URI, got '" + text + "': " + e.getReason());
    }
  }

  private static void requirePresent(String key, Object section) {
    if (section == null) {
      throw ConfigException.invalid(key, "is required");
    }
  }
}
