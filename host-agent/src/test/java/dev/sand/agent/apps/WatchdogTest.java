package dev.sand.agent.apps;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import dev.sand.config.SandboxConfig;
import dev.sand.sandbox.SandboxId;
import dev.sand.sandbox.SandboxSpec;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class WatchdogTest {
  private final FakeRuntime runtime = new FakeRuntime();
  private final AppRegistry apps = new AppRegistry();
  private final AppLog log = new AppLog(Clock.systemUTC());
  private final Watchdog watchdog = new Watchdog(apps, log);

  private DeployedApp deploy(String name) {
    SandboxSpec spec =
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
            List.of("python3", "-m", "w"));
    SandboxId sandbox = runtime.create(spec);
    runtime.start(sandbox);
    DeployedApp app =
        new DeployedApp(
            name,
            1,
            Path.of("/apps", name),
            SandboxConfig.Backend.PROCESS,
            runtime,
            sandbox,
            JsonNodeFactory.instance.objectNode(),
            List.of("g"),
            "sand-app-" + name);
    apps.put(app);
    return app;
  }

  /** A sandbox that exited is started again, reported, and noted in its app's log. */
  @Test
  void restartDead_exitedSandbox_isRestartedAndNoted() {
    deploy("alive");
    DeployedApp dead = deploy("dead");
    runtime.states.put(dead.sandbox(), "exited (137)");

    List<String> restarted = watchdog.restartDead();

    assertThat(restarted).containsExactly("dead");
    assertThat(runtime.states.get(dead.sandbox())).isEqualTo("running");
    assertThat(log.lines("dead")).singleElement().asString().contains("is exited (137)");
    assertThat(log.lines("alive")).isEmpty();
  }

  /** Running sandboxes are left alone. */
  @Test
  void restartDead_allRunning_restartsNothing() {
    deploy("alive");

    assertThat(watchdog.restartDead()).isEmpty();
    assertThat(runtime.started).hasSize(1);
  }

  /** A sandbox the runtime no longer lists is missing: the watchdog tries to start it again. */
  @Test
  void restartDead_missingSandbox_triesAndGoesOn() {
    DeployedApp gone = deploy("gone");
    runtime.remove(gone.sandbox());

    assertThat(watchdog.restartDead()).isEmpty();
    assertThat(log.lines("gone")).singleElement().asString().contains("is missing");
  }
}
