package dev.sand.agent.apps;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.config.ClusterConfig;
import dev.sand.config.SandboxConfig;
import dev.sand.sandbox.SandboxException;
import dev.sand.sandbox.SandboxId;
import dev.sand.sandbox.SandboxRuntime;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deploys applications into sandboxes on this host and keeps them running; coordinates the classes
 * that do each step.
 *
 * <p>Deploy: unpack ({@link AppFiles}) → validate (Python, {@link AppDescriber}) → install
 * requirements → Redis ACL user ({@link AppUsers}) → sandbox (Docker container or process group
 * running {@code python -m sand_worker}, which forks one grain worker per grain; {@link
 * SandboxSpecs}, {@link SandboxLauncher}) → wait until every grain worker is ready → publish the
 * metadata at {@code sand:app:<app>}, which is what makes the app invocable. Undeploy removes all
 * of it and fails the executions still queued ({@link Executions}), so that none is lost silently.
 *
 * <p>{@link #watch} (called periodically) restarts a sandbox that died ({@link Watchdog}). Thread-
 * safe: calls for one app are serialized; different apps proceed in parallel.
 */
public final class Deployer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Deployer.class);
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(90);

  /** One line of deploy progress, for the NDJSON stream. */
  public record Progress(String phase, double elapsedS) {}

  /**
   * Where the deployer's sandboxes run.
   *
   * @param redis the local bus once connected (null before)
   * @param docker the Docker runtime once connected (null before, or when Docker is off)
   * @param processes the process runtime (always available)
   */
  public record Runtimes(
      Supplier<RedisLocalBus> redis, Supplier<SandboxRuntime> docker, SandboxRuntime processes) {}

  private final ClusterConfig config;
  private final Runtimes runtimes;
  private final Clock clock;
  private final Executions executions;
  private final AppDescriber describer;
  private final AppFiles files;
  private final AppUsers users = new AppUsers();
  private final AppKeys keys;
  private final SandboxSpecs specs;
  private final SandboxLauncher launcher = new SandboxLauncher(READY_TIMEOUT);
  private final AppRegistry apps = new AppRegistry();
  private final AppLog log;
  private final Watchdog watchdog;

  /**
   * @param executions fails the executions an undeploy leaves behind
   */
  public Deployer(
      ClusterConfig config,
      Runtimes runtimes,
      Executions executions,
      Clock clock,
      ObjectMapper mapper) {
    this.config = config;
    this.runtimes = runtimes;
    this.executions = executions;
    this.clock = clock;
    this.keys = new AppKeys(mapper);
    SandboxConfig sandbox = config.sandbox();
    this.describer =
        new AppDescriber(sandbox.python(), SandboxSpecs.pythonPath(sandbox.sourceDirs()), mapper);
    this.files = new AppFiles(config.stateDir().resolve("apps"), sandbox.python());
    this.specs = new SandboxSpecs(config, config.stateDir().resolve("logs").resolve("apps"));
    this.log = new AppLog(clock);
    this.watchdog = new Watchdog(apps, log);
  }

  /**
   * Deploys the application in {@code archive} (tar, tar.gz or zip of the app directory), replacing
   * a deployed version of the same name. Blocking (up to a few minutes when requirements must be
   * installed); reports each phase to {@code progress}.
   *
   * @param options the backend (empty for the configured default) and whether backups are on
   * @return the deployed app's metadata
   * @throws DeployException naming what is wrong; nothing of a failed deploy is left behind, and a
   *     previously deployed version keeps running unless the failure came after it was stopped
   */
  public ObjectNode deploy(byte[] archive, DeployOptions options, Consumer<Progress> progress) {
    long started = clock.millis();
    Consumer<String> phase =
        name -> progress.accept(new Progress(name, (clock.millis() - started) / 1000.0));
    RedisLocalBus bus = requireRedis();
    SandboxConfig.Backend chosen = options.backend().orElse(config.sandbox().backend());
    Placement placement = new Placement(chosen, runtimeFor(chosen), options);
    phase.accept("unpacking " + archive.length / 1024 + " KiB");
    Path incoming = files.unpack(archive);
    try {
      phase.accept("validating");
      ObjectNode description = describer.describe(incoming);
      String name = description.path("name").asText();
      synchronized (apps.lockOf(name)) {
        return deployLocked(name, description, incoming, placement, bus, phase);
      }
    } finally {
      AppFiles.deleteTree(incoming);
    }
  }

  private ObjectNode deployLocked(
      String name,
      ObjectNode description,
      Path incoming,
      Placement placement,
      RedisLocalBus bus,
      Consumer<String> phase) {
    SandboxConfig.Backend backend = placement.backend();
    Optional<DeployedApp> previous = apps.find(name);
    int version = previous.map(p -> p.version() + 1).orElse(1);
    List<String> grains = new ArrayList<>();
    description.path("grains").forEach(g -> grains.add(g.asText()));
    for (String remote : placement.options().remoteGrains()) {
      if (!grains.contains(remote)) {
        throw new DeployException(
            DeployException.Reason.INVALID,
            "remote_grains: '"
                + remote
                + "' is not a grain of app '"
                + name
                + "'; grains: "
                + grains);
      }
    }
    JsonNode requirements = description.path("requirements");
    if (requirements.isTextual()) {
      phase.accept("installing requirements from " + requirements.asText());
      files.installRequirements(incoming, requirements.asText());
    }
    Path dir = files.place(incoming, name, version);
    if (previous.isPresent()) {
      phase.accept("stopping version " + previous.get().version());
      SandboxLauncher.stop(previous.get());
    }
    AppUsers.Credentials credentials = users.create(bus, name);
    AppKeys.clearReady(bus, name, grains);
    phase.accept("starting the " + backend.wireName() + " sandbox");
    SandboxId sandbox;
    try {
      sandbox =
          launcher.launch(
              placement.runtime(),
              specs.of(new SandboxSpecs.Launch(name, dir, description, placement, credentials)));
    } catch (DeployException e) {
      AppUsers.delete(bus, credentials.user());
      throw e;
    }
    DeployedApp app =
        new DeployedApp(
            name,
            version,
            dir,
            backend,
            placement.runtime(),
            sandbox,
            description,
            grains,
            credentials.user());
    phase.accept("waiting for " + grains.size() + " grain worker(s)");
    try {
      launcher.awaitWorkers(app, bus);
    } catch (DeployException e) {
      SandboxLauncher.remove(app);
      AppUsers.delete(bus, credentials.user());
      AppFiles.deleteTree(dir);
      if (previous.isPresent()) {
        apps.remove(name);
        AppKeys.withdraw(bus, name);
      }
      throw e;
    }
    ObjectNode metadata = metadata(description, version, placement);
    keys.publish(bus, name, metadata);
    apps.put(app.withMetadata(metadata));
    previous.ifPresent(p -> AppFiles.deleteTree(p.dir()));
    log.note(
        name,
        "deployed version " + version + " (" + backend.wireName() + " sandbox " + sandbox + ")");
    LOG.atInfo()
        .addKeyValue("app", name)
        .addKeyValue("version", version)
        .addKeyValue("backend", backend.wireName())
        .log("app deployed");
    return metadata;
  }

  /** What {@code sand:app:<app>} holds: the description, and how and where the app runs. */
  private ObjectNode metadata(ObjectNode description, int version, Placement placement) {
    ObjectNode metadata = description.deepCopy();
    metadata.put("version", version);
    metadata.put("backend", placement.backend().wireName());
    metadata.put("backups", placement.options().backups());
    metadata.putPOJO("remote_grains", placement.options().remoteGrains());
    metadata.put("host", config.hostId());
    metadata.put("deployed_at", Instant.now(clock).toString());
    return metadata;
  }

  /**
   * Removes {@code name}: its sandbox, Redis user, queues, data and files. Executions still queued
   * fail with an error saying the app was undeployed. Blocking.
   *
   * @throws DeployException (NOT_FOUND) when no such app is deployed
   */
  public void undeploy(String name) {
    synchronized (apps.lockOf(name)) {
      DeployedApp app = apps.remove(name).orElseThrow(() -> AppRegistry.notDeployed(name));
      RedisLocalBus bus = requireRedis();
      AppKeys.withdraw(bus, name);
      SandboxLauncher.remove(app);
      executions.failQueued(
          bus,
          name,
          app.grains(),
          "application '" + name + "' was undeployed before this execution finished");
      AppUsers.delete(bus, app.redisUser());
      AppKeys.deleteOwned(bus, name);
      files.deleteApp(name);
      log.note(name, "undeployed version " + app.version());
      LOG.atInfo().addKeyValue("app", name).log("app undeployed");
    }
  }

  /** The metadata of every deployed app, by name. */
  public List<ObjectNode> list() {
    return apps.all().stream().map(Deployer::withState).toList();
  }

  /** The metadata of {@code name} with its sandbox's state, or empty. */
  public Optional<ObjectNode> describe(String name) {
    return apps.find(name).map(Deployer::withState);
  }

  /**
   * The last {@code tail} lines of the app's sandbox output (grain workers' logs, tracebacks),
   * after the agent's own notes about it (deploys, restarts).
   *
   * @throws DeployException (NOT_FOUND) when no such app is deployed
   */
  public String logs(String name, int tail) {
    DeployedApp app = apps.require(name);
    StringBuilder out = new StringBuilder();
    for (String line : log.lines(name)) {
      out.append("[agent] ").append(line).append('\n');
    }
    try {
      out.append(app.runtime().logs(app.sandbox(), tail));
    } catch (SandboxException e) {
      out.append("[agent] cannot read the sandbox's output: ").append(e.getMessage()).append('\n');
    }
    return out.toString();
  }

  /** Whether {@code name} is deployed (for the timer loop and the Kafka ingress). */
  public boolean isDeployed(String name) {
    return apps.contains(name);
  }

  /**
   * Restarts every sandbox that is no longer running and reports it in the app's log. Returns the
   * apps whose sandbox was restarted (their in-flight events need replaying). Never throws.
   */
  public List<String> watch() {
    return watchdog.restartDead();
  }

  /** Notes an event about {@code app} in the log {@code sand logs} shows. */
  public void note(String app, String line) {
    log.note(app, line);
  }

  /**
   * Stops every sandbox and withdraws the apps from the local bus: a stopped agent runs no app, so
   * frontends must refuse invocations rather than queue events nobody takes. Never throws.
   */
  @Override
  public void close() {
    for (DeployedApp app : apps.all()) {
      try {
        RedisLocalBus bus = runtimes.redis().get();
        if (bus != null) {
          AppKeys.withdraw(bus, app.name());
        }
        SandboxLauncher.remove(app);
      } catch (RuntimeException e) {
        LOG.atWarn()
            .addKeyValue("app", app.name())
            .addKeyValue("error", e.toString())
            .log("stop failed");
      }
    }
  }

  private static ObjectNode withState(DeployedApp app) {
    ObjectNode node = app.metadata().deepCopy();
    String state;
    try {
      state = app.sandboxState();
    } catch (RuntimeException e) {
      state = "unknown (" + e.getMessage() + ")";
    }
    node.put("sandbox", app.sandbox().value());
    node.put("state", state);
    return node;
  }

  private SandboxRuntime runtimeFor(SandboxConfig.Backend backend) {
    if (backend == SandboxConfig.Backend.PROCESS) {
      return runtimes.processes();
    }
    SandboxRuntime runtime = runtimes.docker().get();
    if (runtime == null) {
      throw new DeployException(
          DeployException.Reason.UNAVAILABLE,
          "the docker backend is not available on this host (docker is off or not reachable);"
              + " deploy with backend=process");
    }
    return runtime;
  }

  private RedisLocalBus requireRedis() {
    RedisLocalBus bus = runtimes.redis().get();
    if (bus == null) {
      throw new DeployException(
          DeployException.Reason.UNAVAILABLE,
          "the local bus (redis at " + config.redis().socket() + ") is not connected yet");
    }
    return bus;
  }
}
