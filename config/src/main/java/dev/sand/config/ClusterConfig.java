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
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The configuration every SAND process of one host reads: {@code STATE/conf/cluster.json}, written
 * by {@code sand up}. Validated once, at start-up, into immutable values; a process that starts has
 * a config that passed every check here.
 *
 * <p>Example (keys not listed below are ignored; {@code cluster.schema.json} beside this class
 * declares every key, written by {@code sand up} and read here, decision 0038):
 *
 * <pre>{@code
 * {"state_dir": "/abs/state", "host_id": "host-1",
 *  "redis": {"socket": "/abs/state/run/redis.sock"},
 *  "kafka": {"bootstrap": "127.0.0.1:19092"},
 *  "cassandra": {"contact_point": "127.0.0.1:19042", "datacenter": "datacenter1",
 *                "keyspace": "sand", "execution_retention_days": 30},
 *  "docker": {"host": "unix:///abs/state/run/docker.sock", "enabled": true},
 *  "frontend": {"ports": [18081, 18082], "max_payload_kb": 256, "ui_dir": "/abs/sand/frontend/ui/dist"},
 *  "home": "/abs/sand",
 *  "host_agent": {"port": 18090, "bind": "127.0.0.1", "secret": "..."},
 *  "nginx": {"port": 18080},
 *  "tracing": {"otlp_endpoint": "http://127.0.0.1:4318/v1/traces"},
 *  "admission": {"max_queued_per_app": 8, "max_queued_per_host": 32, "retry_after_s": 1,
 *                "adaptive": true},
 *  "hosts": [{"id": "host-1", "redis_socket": "/abs/state/run/redis.sock",
 *             "agent_url": "http://127.0.0.1:18090"}]}
 * }</pre>
 *
 * @param stateDir absolute directory of the cluster's state ({@code state_dir})
 * @param hostId this host's id, unique in the cluster ({@code host_id}); labels its containers
 * @param tracing where spans of traced executions are exported ({@code tracing.otlp_endpoint},
 *     optional: none when absent)
 * @param admission how much queued work a host takes before it refuses invocations ({@code
 *     admission}, optional: {@link AdmissionConfig#DEFAULT} when absent; decision 0023)
 * @param hosts every host of the cluster ({@code hosts}), at least one, ids unique; when the file
 *     has no list, the one host this file describes
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
    SandboxConfig sandbox,
    List<HostEntry> hosts,
    TracingConfig tracing,
    AdmissionConfig admission) {

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
    if (hosts == null) {
      hosts = List.of(selfEntry(hostId, redis, hostAgent));
    }
    if (hosts.isEmpty()) {
      throw ConfigException.invalid("hosts", "must list at least one host");
    }
    Set<String> ids = new HashSet<>();
    for (int i = 0; i < hosts.size(); i++) {
      if (!ids.add(hosts.get(i).id())) {
        throw ConfigException.invalid(
            "hosts[" + i + "].id", "must be unique, got '" + hosts.get(i).id() + "' twice");
      }
    }
    hosts = List.copyOf(hosts);
    tracing = tracing == null ? TracingConfig.OFF : tracing;
    admission = admission == null ? AdmissionConfig.DEFAULT : admission;
  }

  // What a file written before the list existed means: this host, its agent on loopback.
  private static HostEntry selfEntry(String hostId, RedisConfig redis, HostAgentConfig agent) {
    return new HostEntry(
        hostId,
        redis.socket(),
        URI.create("http://" + HostAgentConfig.DEFAULT_BIND + ":" + agent.port()));
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
    return parse(top(json));
  }

  /**
   * The dotted path of every key the parser looks up in {@code json} ({@code redis.socket}, {@code
   * hosts[].id}), present or not; a test compares them with {@code cluster.schema.json}'s
   * properties (decision 0038). Every key is looked up whatever the values of the others, so a
   * document with every key gives all of them.
   *
   * @throws ConfigException as {@link #parse} does
   */
  static Set<String> keysRead(String json) {
    Section top = top(json);
    parse(top);
    return top.lookups();
  }

  private static Section top(String json) {
    JsonNode root;
    try {
      root = MAPPER.readTree(json);
    } catch (JacksonException e) {
      throw ConfigException.unreadable(null, "is not valid JSON: " + e.getOriginalMessage(), e);
    }
    if (root == null || !root.isObject()) {
      throw ConfigException.unreadable(null, "must hold a JSON object", null);
    }
    return new Section(root);
  }

  private static ClusterConfig parse(Section top) {
    // read even when frontend.ui_dir makes it unneeded: which keys are read must not depend on
    // which others are there (keysRead)
    Path home = top.has("home") ? Path.of(top.text("home")) : null;
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
                    s.text("keyspace"),
                    s.has("execution_retention_days")
                        ? s.integer("execution_retention_days")
                        : CassandraConfig.DEFAULT_RETENTION_DAYS,
                    s.has("replication_factor") ? s.integer("replication_factor") : 1)),
        top.section(
            "docker", s -> new DockerConfig(uri("host", s.text("host")), s.bool("enabled"))),
        top.section(
            "frontend",
            s ->
                new FrontendConfig(
                    s.integers("ports"),
                    s.integer("max_payload_kb"),
                    s.has("ui_dir")
                        ? Path.of(s.text("ui_dir"))
                        : home == null ? null : FrontendConfig.defaultUiDir(home))),
        top.section(
            "host_agent",
            s ->
                new HostAgentConfig(
                    s.integer("port"),
                    s.has("bind") ? s.text("bind") : HostAgentConfig.DEFAULT_BIND,
                    s.has("secret") ? s.text("secret") : "")),
        top.section("nginx", s -> new NginxConfig(s.integer("port"))),
        sandbox(top),
        top.has("hosts")
            ? top.sections(
                "hosts",
                s ->
                    new HostEntry(
                        s.text("id"),
                        Path.of(s.text("redis_socket")),
                        uri("agent_url", s.text("agent_url"))))
            : null,
        top.has("tracing")
            ? top.section("tracing", s -> TracingConfig.of(s.text("otlp_endpoint")))
            : TracingConfig.OFF,
        top.has("admission")
            ? top.section(
                "admission",
                s ->
                    new AdmissionConfig(
                        s.integer("max_queued_per_app"),
                        s.integer("max_queued_per_host"),
                        s.integer("retry_after_s"),
                        // absent from a cluster.json of an older `sand`: the default
                        s.has("adaptive") && s.bool("adaptive")))
            : AdmissionConfig.DEFAULT);
  }

  // Optional: older config files (and tests) without it get Docker when enabled, else processes.
  private static SandboxConfig sandbox(Section top) {
    boolean docker = top.section("docker", s -> s.bool("enabled"));
    if (!top.has("sandbox")) {
      return new SandboxConfig(
          docker ? SandboxConfig.Backend.DOCKER : SandboxConfig.Backend.PROCESS,
          "sand-base:bookworm-2",
          Path.of("python3"),
          List.of(),
          null,
          1.0,
          512,
          SandboxConfig.DEFAULT_TMP_SIZE_MB,
          SandboxConfig.Limits.DEFAULT);
    }
    return top.section(
        "sandbox",
        s -> {
          // looked up (a string, when there) without Docker too: the keys read must not depend
          // on docker.enabled (keysRead); only Docker needs it
          String backend = s.has("backend") || docker ? s.text("backend") : null;
          return new SandboxConfig(
              docker ? SandboxConfig.Backend.parse(backend) : SandboxConfig.Backend.PROCESS,
              s.text("base_image"),
              Path.of(s.text("python")),
              s.texts("source_dirs").stream().map(Path::of).toList(),
              Path.of(s.text("site_dir")),
              s.number("cpus"),
              s.integer("pids_limit"),
              s.has("tmp_size_mb") ? s.integer("tmp_size_mb") : SandboxConfig.DEFAULT_TMP_SIZE_MB,
              limits(s));
        });
  }

  // Optional, each key on its own: config files that predate decision 0022 get the defaults.
  private static SandboxConfig.Limits limits(Section s) {
    SandboxConfig.Limits d = SandboxConfig.Limits.DEFAULT;
    return new SandboxConfig.Limits(
        s.has("cpu_weight") ? s.integer("cpu_weight") : d.cpuWeight(),
        s.has("max_cpu_weight") ? s.integer("max_cpu_weight") : d.maxCpuWeight(),
        s.has("memory_mb") ? s.integer("memory_mb") : d.memoryMb(),
        s.has("max_memory_mb") ? s.integer("max_memory_mb") : d.maxMemoryMb(),
        s.has("max_sandbox_memory_mb")
            ? s.integer("max_sandbox_memory_mb")
            : d.maxSandboxMemoryMb());
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
