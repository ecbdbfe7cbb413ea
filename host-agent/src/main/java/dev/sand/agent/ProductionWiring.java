package dev.sand.agent;

import dev.sand.bridge.kafka.KafkaBridge;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.config.ClusterConfig;
import dev.sand.contracts.Topics;
import dev.sand.sandbox.SandboxExits;
import dev.sand.sandbox.SandboxInfo;
import dev.sand.sandbox.SandboxRuntime;
import dev.sand.sandbox.docker.DockerSandboxRuntime;
import dev.sand.store.cassandra.CassandraStore;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The production backends of a host agent (Redis, Kafka, Cassandra, Docker), each a {@link
 * Dependency} that connects, checks and pings its client; Docker's first check removes the
 * sandboxes a previous run of this host left behind. Does no I/O until a dependency is started.
 */
final class ProductionWiring {
  // the agent's name: the log lines it wrote before this class existed keep their logger
  private static final Logger LOG = LoggerFactory.getLogger(HostAgent.class);
  private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(5);

  private ProductionWiring() {}

  /** The production wiring: real backends, production timing, system clock. */
  static HostAgent.Wiring of(ClusterConfig config) {
    List<Dependency> dependencies = new ArrayList<>();
    Backend<RedisLocalBus> redis =
        new Backend<>(
            "redis",
            () ->
                RedisLocalBus.connect(
                    config.redis().socket(), config.redis().password(), REQUEST_TIMEOUT),
            bus -> {
              bus.ping();
              return "redis " + bus.serverVersion() + " at " + config.redis().socket();
            },
            bus -> {
              bus.ping();
              return "PONG from " + config.redis().socket();
            });
    dependencies.add(redis);
    Backend<KafkaBridge> kafka =
        new Backend<>(
            "kafka",
            () ->
                KafkaBridge.connect(
                    config.kafka(), "sand-host-agent-" + config.hostId(), REQUEST_TIMEOUT),
            bridge -> {
              bridge.ensureTopics(List.of(Topics.RESULTS));
              return bridge.ping() + ", topic " + Topics.RESULTS + " present";
            },
            KafkaBridge::ping);
    dependencies.add(kafka);
    Backend<CassandraStore> cassandra =
        new Backend<>(
            "cassandra",
            () -> CassandraStore.connect(config.cassandra(), REQUEST_TIMEOUT),
            store -> {
              store.ensureSchema();
              return "cassandra "
                  + store.ping()
                  + ", keyspace "
                  + config.cassandra().keyspace()
                  + " ready";
            },
            store -> "cassandra " + store.ping());
    dependencies.add(cassandra);
    SandboxExits exits = new SandboxExits();
    Supplier<SandboxRuntime> dockerClient = () -> null;
    if (config.docker().enabled()) {
      Backend<SandboxRuntime> docker =
          new Backend<SandboxRuntime>(
              "docker",
              () -> DockerSandboxRuntime.create(config.docker().host(), config.hostId(), exits),
              runtime -> {
                String version = runtime.ping();
                int removed = removeOrphans(runtime, config.hostId());
                return version + ", removed " + removed + " orphan sandbox(es)";
              },
              SandboxRuntime::ping);
      dependencies.add(docker);
      dockerClient = docker::client;
    } else {
      dependencies.add(new Disabled("docker", "docker.enabled is false in the config"));
    }
    return new HostAgent.Wiring(
        config.hostAgent().port(),
        dependencies,
        Timing.DEFAULT,
        Clock.systemUTC(),
        new HostAgent.Clients(
            redis::client, kafka::client, cassandra::client, dockerClient, exits));
  }

  /**
   * Removes every sandbox labelled as owned by {@code hostId}: after a crash or an unclean stop,
   * they belong to no one. Returns how many were removed.
   */
  static int removeOrphans(SandboxRuntime runtime, String hostId) {
    List<SandboxInfo> owned = runtime.listOwned();
    for (SandboxInfo orphan : owned) {
      LOG.atInfo()
          .addKeyValue("host_id", hostId)
          .addKeyValue("sandbox", orphan.id().toString())
          .addKeyValue("app", orphan.app())
          .addKeyValue("state", orphan.state())
          .log("removing orphan sandbox");
      runtime.remove(orphan.id());
    }
    return owned.size();
  }
}
