package dev.sand.agent.apps;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.bus.redis.LocalRedis;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.config.SandboxConfig;
import dev.sand.contracts.Keys;
import dev.sand.sandbox.SandboxId;
import dev.sand.sandbox.SandboxSpec;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The cluster view of one host: sandbox states from the runtime, worker health from Redis. */
@Timeout(30)
class SandboxReportTest {
  @RegisterExtension static final LocalRedis REDIS = new LocalRedis();
  static final ObjectMapper MAPPER = new ObjectMapper();

  private final RedisLocalBus bus = REDIS.bus();

  private static DeployedApp app(FakeRuntime runtime, String name, String owner, String... grains) {
    SandboxId sandbox =
        runtime.create(
            new SandboxSpec(
                name,
                "img",
                64,
                1,
                100,
                8,
                null,
                new SandboxSpec.User(2_000_000_000, 2_000_000_000),
                64,
                List.of(),
                Map.of(),
                List.of("python3", "-m", "w")));
    runtime.start(sandbox);
    ObjectNode metadata = MAPPER.createObjectNode();
    if (owner != null) {
      metadata.put("owner", owner);
    }
    return new DeployedApp(
        name,
        2,
        Path.of("/apps", name),
        SandboxConfig.Backend.PROCESS,
        runtime,
        sandbox,
        metadata,
        List.of(grains),
        "sand-app-" + name);
  }

  @Test
  void of_reportsStateOwnerAndEachWorkersHealthAndPid() {
    FakeRuntime runtime = new FakeRuntime();
    DeployedApp hello = app(runtime, "hello", "ada", "upper", "greet");
    DeployedApp gone = app(runtime, "gone", null, "only");
    runtime.remove(gone.sandbox());
    bus.set(
        Keys.ready("hello", "upper"),
        "4242".getBytes(StandardCharsets.UTF_8),
        Duration.ofSeconds(30));

    ArrayNode report = SandboxReport.of(List.of(hello, gone), bus, MAPPER);

    JsonNode first = report.get(0);
    assertThat(first.path("app").asText()).isEqualTo("hello");
    assertThat(first.path("owner").asText()).isEqualTo("ada");
    assertThat(first.path("version").asInt()).isEqualTo(2);
    assertThat(first.path("backend").asText()).isEqualTo("process");
    assertThat(first.path("state").asText()).isEqualTo("running");
    assertThat(first.path("workers").get(0).path("grain").asText()).isEqualTo("upper");
    assertThat(first.path("workers").get(0).path("healthy").asBoolean()).isTrue();
    assertThat(first.path("workers").get(0).path("pid").asLong()).isEqualTo(4242);
    assertThat(first.path("workers").get(1).path("healthy").asBoolean()).isFalse();
    assertThat(first.path("workers").get(1).path("pid").isNull()).isTrue();
    JsonNode second = report.get(1);
    assertThat(second.path("owner").isNull()).isTrue();
    assertThat(second.path("state").asText()).isEqualTo("missing");
  }

  /** Without Redis every worker is reported unhealthy rather than failing the listing. */
  @Test
  void of_noRedis_workersUnhealthy() {
    FakeRuntime runtime = new FakeRuntime();

    ArrayNode report =
        SandboxReport.of(List.of(app(runtime, "hello", "ada", "upper")), null, MAPPER);

    assertThat(report.get(0).path("workers").get(0).path("healthy").asBoolean()).isFalse();
  }
}
