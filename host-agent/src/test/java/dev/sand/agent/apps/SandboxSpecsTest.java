package dev.sand.agent.apps;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.config.ClusterConfig;
import dev.sand.config.SandboxConfig;
import dev.sand.sandbox.SandboxSpec;
import dev.sand.sandbox.SandboxUsers;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SandboxSpecsTest {
  // a Docker-enabled host with a sandbox section; every other section is required but unused
  private static final ClusterConfig CONFIG =
      ClusterConfig.parse(
          """
          {"state_dir": "/st", "host_id": "h1", "redis": {"socket": "/st/run/redis.sock"},
           "kafka": {"bootstrap": "k:1"}, "nginx": {"port": 1},
           "cassandra": {"contact_point": "c:1", "datacenter": "d", "keyspace": "k"},
           "docker": {"host": "unix:///d.sock", "enabled": true},
           "frontend": {"ports": [2], "max_payload_kb": 1}, "host_agent": {"port": 3},
           "sandbox": {"backend": "docker", "base_image": "sand-base:1", "python": "/py/bin/python3",
             "source_dirs": ["/src/sdk", "/src/worker"], "site_dir": "/site", "cpus": 2,
             "pids_limit": 64, "tmp_size_mb": 32}}
          """);

  @TempDir Path tmp;
  private SandboxSpecs specs;

  @BeforeEach
  void setUp() {
    specs =
        new SandboxSpecs(
            CONFIG,
            Path.of("/st/logs/apps"),
            new SandboxUsers(tmp.resolve("sandbox/uids"), tmp.resolve("machine-uids")));
  }

  private static SandboxSpecs.Launch launch(SandboxConfig.Backend backend, String description)
      throws Exception {
    ObjectNode app = (ObjectNode) new ObjectMapper().readTree(description);
    DeployOptions options = new DeployOptions(Optional.of(backend), false, Set.of("crop"));
    return new SandboxSpecs.Launch(
        "thumbs",
        Path.of("/st/apps/thumbs/v2"),
        app,
        new SandboxPlan(backend, new FakeRuntime(), options, Placement.of(app, List.of("h1"))),
        new AppUsers.Credentials("sand-app-thumbs", "secret"));
  }

  /** A grain placed on other hosts only gets no worker here and is reached through Kafka. */
  @Test
  void of_grainPlacedElsewhere_isRemoteAndNotLocal() throws Exception {
    String description =
        """
        {"grains": ["resize", "crop", "tag"],
         "placement": {"hosts": ["h1", "h2"],
                       "grains": {"resize": ["h1", "h2"], "crop": ["h1", "h2"], "tag": ["h2"]}}}
        """;
    SandboxSpec spec = specs.of(launch(SandboxConfig.Backend.PROCESS, description));

    assertThat(spec.env())
        .containsEntry("SAND_LOCAL_GRAINS", "resize,crop")
        // crop: the deploy option (through Kafka although local); tag: placed on h2 only
        .containsEntry("SAND_REMOTE_GRAINS", "crop,tag");
    // memory: one share per grain that runs here, plus one for bursts
    assertThat(spec.memoryMb()).isEqualTo(512 * 3);
  }

  /** Without a placement in the description, every grain runs here (the default). */
  @Test
  void of_noPlacement_runsEveryGrainHere() throws Exception {
    SandboxSpec spec =
        specs.of(launch(SandboxConfig.Backend.PROCESS, "{\"grains\": [\"resize\", \"crop\"]}"));

    assertThat(spec.env()).containsEntry("SAND_LOCAL_GRAINS", "resize,crop");
  }

  /** Process sandboxes run the host's Python on the host paths, with the worker's environment. */
  @Test
  void of_processBackend_setsWorkerEnvironmentWithHostPaths() throws Exception {
    SandboxSpec spec =
        specs.of(launch(SandboxConfig.Backend.PROCESS, "{\"grains\": [\"resize\", \"crop\"]}"));

    assertThat(spec.command()).containsExactly("/py/bin/python3", "-m", "sand_worker");
    // the jail binds exactly these, read-only, at their host paths
    assertThat(spec.mounts())
        .containsExactly(
            new SandboxSpec.Mount("/st/apps/thumbs/v2", "/st/apps/thumbs/v2", true),
            new SandboxSpec.Mount("/st/run", "/st/run", true),
            new SandboxSpec.Mount("/src/sdk", "/src/sdk", true),
            new SandboxSpec.Mount("/src/worker", "/src/worker", true));
    assertThat(spec.env())
        .containsEntry("SAND_APP", "thumbs")
        .containsEntry("SAND_HOST_ID", "h1")
        .containsEntry("SAND_REDIS_USER", "sand-app-thumbs")
        .containsEntry("SAND_REDIS_PASSWORD", "secret")
        .containsEntry("SAND_MAX_CONCURRENCY", "64")
        .containsEntry("SAND_BACKUP", "0")
        .containsEntry("SAND_REMOTE_GRAINS", "crop")
        .containsEntry("SAND_APP_DIR", "/st/apps/thumbs/v2")
        .containsEntry("SAND_REDIS_SOCKET", "/st/run/redis.sock")
        .containsEntry("PYTHONPATH", "/src/sdk:/src/worker:/st/apps/thumbs/v2/.sand-site");
    assertThat(spec.logFile()).isEqualTo(Path.of("/st/logs/apps/thumbs.log"));
  }

  /** Docker sandboxes see the app, the socket's directory and SAND's sources at fixed paths. */
  @Test
  void of_dockerBackend_mountsAppSocketAndSources() throws Exception {
    SandboxSpec spec = specs.of(launch(SandboxConfig.Backend.DOCKER, "{\"grains\": [\"g\"]}"));

    assertThat(spec.image()).isEqualTo("sand-base:1");
    assertThat(spec.command()).containsExactly("python3", "-m", "sand_worker");
    assertThat(spec.mounts())
        .containsExactly(
            new SandboxSpec.Mount("/st/apps/thumbs/v2", "/app", true),
            new SandboxSpec.Mount("/st/run", "/sand/run", true),
            new SandboxSpec.Mount("/src/sdk", "/sand/src/0", true),
            new SandboxSpec.Mount("/src/worker", "/sand/src/1", true),
            new SandboxSpec.Mount("/site", "/sand/site", true));
    assertThat(spec.env())
        .containsEntry("SAND_APP_DIR", "/app")
        .containsEntry("SAND_REDIS_SOCKET", "/sand/run/redis.sock")
        .containsEntry("PYTHONPATH", "/sand/src/0:/sand/src/1:/sand/site:/app/.sand-site");
  }

  /** The sandbox's CPU weight is the app's, else the operator's default (decision 0022). */
  @Test
  void of_cpuWeight_isTheAppsElseTheDefault() throws Exception {
    String lowered = "{\"grains\": [\"a\"], \"limits\": {\"cpu_weight\": 10}}";

    assertThat(specs.of(launch(SandboxConfig.Backend.DOCKER, lowered)).cpuWeight()).isEqualTo(10);
    assertThat(specs.of(launch(SandboxConfig.Backend.DOCKER, lowered)).cpuShares()).isEqualTo(102);
    assertThat(specs.of(launch(SandboxConfig.Backend.PROCESS, "{\"grains\": [\"a\"]}")).cpuWeight())
        .isEqualTo(100);
  }

  /** The sandbox gets the app's memory_mb once per grain and once for bursts, up to 8 GiB. */
  @Test
  void of_memory_isOneSharePerGrainPlusOneCapped() throws Exception {
    String twoGrains = "{\"grains\": [\"a\", \"b\"], \"limits\": {\"memory_mb\": 100}}";
    String manyGrains = "{\"grains\": [\"a\", \"b\", \"c\"], \"limits\": {\"memory_mb\": 4096}}";

    assertThat(specs.of(launch(SandboxConfig.Backend.PROCESS, twoGrains)).memoryMb())
        .isEqualTo(300);
    assertThat(specs.of(launch(SandboxConfig.Backend.PROCESS, manyGrains)).memoryMb())
        .isEqualTo(8192);
  }

  /** Every sandbox runs as its app's own unprivileged user, with HOME and TMPDIR in /tmp. */
  @Test
  void of_anyBackend_runsAsTheAppsUserWithTmpAsHome() throws Exception {
    for (SandboxConfig.Backend backend : SandboxConfig.Backend.values()) {
      SandboxSpec spec = specs.of(launch(backend, "{\"grains\": [\"g\"]}"));

      assertThat(spec.user()).isEqualTo(new SandboxSpec.User(2_000_000_000, 2_000_000_000));
      assertThat(spec.tmpSizeMb()).isEqualTo(32);
      assertThat(spec.env())
          .containsEntry("HOME", "/tmp")
          .containsEntry("TMPDIR", "/tmp")
          .containsEntry("PYTHONDONTWRITEBYTECODE", "1");
    }
  }

  /**
   * The sandbox gets its app's task-token key, hex HMAC-SHA256(secret, "sand-task-token\n" + app)
   * (the known-answer vector of TaskTokensTest), never the agents' secret itself.
   */
  @Test
  void of_withAgentSecret_passesTheAppsTaskTokenKey() throws Exception {
    ClusterConfig withSecret =
        ClusterConfig.parse(
            """
            {"state_dir": "/st", "host_id": "h1", "redis": {"socket": "/st/run/redis.sock"},
             "kafka": {"bootstrap": "k:1"}, "nginx": {"port": 1},
             "cassandra": {"contact_point": "c:1", "datacenter": "d", "keyspace": "k"},
             "docker": {"host": "unix:///d.sock", "enabled": false},
             "frontend": {"ports": [2], "max_payload_kb": 1},
             "host_agent": {"port": 3, "secret": "s3cret-agent-0033"}}
            """);
    SandboxSpecs signed =
        new SandboxSpecs(
            withSecret,
            Path.of("/st/logs/apps"),
            new SandboxUsers(tmp.resolve("sandbox/uids"), tmp.resolve("machine-uids")));

    SandboxSpec spec = signed.of(launch(SandboxConfig.Backend.PROCESS, "{\"grains\": [\"g\"]}"));

    assertThat(spec.env())
        .containsEntry(
            "SAND_TASK_TOKEN_KEY",
            "190c0ce274d1b3da90ac23db1ccb2de8c0f92601b34f03005ecf95055ac0aef9")
        .doesNotContainValue("s3cret-agent-0033");
  }

  /** Without host_agent.secret there is no key to derive: the variable is not set. */
  @Test
  void of_withoutAgentSecret_setsNoTaskTokenKey() throws Exception {
    SandboxSpec spec = specs.of(launch(SandboxConfig.Backend.PROCESS, "{\"grains\": [\"g\"]}"));

    assertThat(spec.env()).doesNotContainKey("SAND_TASK_TOKEN_KEY");
  }
}
