package dev.sand.agent.apps;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.config.ClusterConfig;
import dev.sand.config.SandboxConfig;
import dev.sand.sandbox.SandboxId;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one version of an app on this host and takes it away again: installs its requirements,
 * places its files, creates its Redis user, starts its sandbox, waits for its grain workers and
 * publishes {@code sand:app:<app>}; a start that fails removes what it had created. Removal fails
 * the executions still queued ({@link Executions}).
 *
 * <p>Not locked itself: the caller holds the app's lock ({@link AppRegistry#lockOf}) around {@link
 * #install} and {@link #uninstall}.
 */
final class AppInstaller {
  // the deployer's name: the log lines it wrote before this class existed keep their logger
  private static final Logger LOG = LoggerFactory.getLogger(Deployer.class);
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(90);

  /**
   * One version to install.
   *
   * @param incoming the unpacked, validated app (moved into place by the install)
   * @param plan where and how its sandbox runs
   */
  record Install(
      String name, int version, ObjectNode description, Path incoming, SandboxPlan plan) {}

  private final ClusterConfig config;
  private final AppRegistry apps;
  private final AppFiles files;
  private final AppLog log;
  private final Executions executions;
  private final Clock clock;
  private final ObjectMapper mapper;
  private final AppUsers users = new AppUsers();
  private final AppKeys keys;
  private final SandboxSpecs specs;
  private final SandboxLauncher launcher = new SandboxLauncher(READY_TIMEOUT);
  // apps whose sandbox a new version replaced since the last take: their in-flight events replay
  private final Set<String> replaced = ConcurrentHashMap.newKeySet();

  AppInstaller(
      ClusterConfig config,
      AppRegistry apps,
      AppFiles files,
      AppLog log,
      Executions executions,
      Clock clock,
      ObjectMapper mapper) {
    this.config = config;
    this.apps = apps;
    this.files = files;
    this.log = log;
    this.executions = executions;
    this.clock = clock;
    this.mapper = mapper;
    this.keys = new AppKeys(mapper);
    this.specs = new SandboxSpecs(config, config.stateDir().resolve("logs").resolve("apps"));
  }

  /**
   * Installs {@code install} and publishes its metadata, replacing the version running here (which
   * is stopped first; its files are deleted once the new one runs). Blocking until every grain
   * worker placed here is ready; reports each phase to {@code phase}.
   *
   * @return the published metadata
   * @throws DeployException naming what failed; what this install created is removed, and a
   *     replaced version stays stopped and withdrawn
   */
  ObjectNode install(Install install, RedisLocalBus bus, Consumer<String> phase) {
    String name = install.name();
    int version = install.version();
    ObjectNode description = install.description();
    SandboxPlan plan = install.plan();
    SandboxConfig.Backend backend = plan.backend();
    Optional<DeployedApp> previous = apps.find(name);
    // only the grains placed here get a worker (and are awaited); the others are remote
    List<String> grains = plan.placement().grainsOn(config.hostId());
    AppValidation.requireGrains(description, plan.options().remoteGrains());
    JsonNode requirements = description.path("requirements");
    if (requirements.isTextual()) {
      phase.accept("installing requirements from " + requirements.asText());
      files.installRequirements(install.incoming(), requirements.asText());
    }
    Path dir = files.place(install.incoming(), name, version);
    if (previous.isPresent()) {
      phase.accept("stopping version " + previous.get().version());
      SandboxLauncher.stop(previous.get());
      // what its instances had taken and not finished is replayed like a dead sandbox's
      replaced.add(name);
    }
    AppUsers.Credentials credentials = users.create(bus, name);
    AppKeys.clearReady(bus, name, grains);
    phase.accept("starting the " + backend.wireName() + " sandbox");
    SandboxId sandbox;
    try {
      sandbox =
          launcher.launch(
              plan.runtime(),
              specs.of(new SandboxSpecs.Launch(name, dir, description, plan, credentials)));
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
            plan.runtime(),
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
    ObjectNode metadata = metadata(description, version, plan);
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
  private ObjectNode metadata(ObjectNode description, int version, SandboxPlan plan) {
    ObjectNode metadata = description.deepCopy();
    metadata.put("version", version);
    metadata.put("backend", plan.backend().wireName());
    metadata.put("backups", plan.options().backups());
    plan.options().owner().ifPresent(o -> metadata.put("owner", o));
    metadata.putPOJO("remote_grains", plan.options().remoteGrains());
    metadata.set("placement", plan.placement().toJson(mapper));
    // the frontends send an invocation only to a host that runs its workflow's entry grain
    plan.placement().grainsOn(config.hostId()).forEach(metadata.putArray("local_grains")::add);
    metadata.put("host", config.hostId());
    metadata.put("deployed_at", Instant.now(clock).toString());
    return metadata;
  }

  /**
   * Removes {@code name} from this host: its sandbox, Redis user, queues, data and files; the
   * executions still queued fail. {@code why} goes to the app's log. Blocking.
   *
   * @throws DeployException (NOT_FOUND) when {@code name} does not run here
   */
  void uninstall(String name, String why, RedisLocalBus bus) {
    DeployedApp app = apps.remove(name).orElseThrow(() -> AppRegistry.notDeployed(name));
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
    log.note(name, why + " version " + app.version());
    LOG.atInfo().addKeyValue("app", name).log("app undeployed");
  }

  /**
   * The apps whose sandbox a new version replaced since the last call; each is returned once.
   * Thread-safe.
   */
  List<String> takeReplaced() {
    List<String> taken = new ArrayList<>();
    for (String name : List.copyOf(replaced)) {
      if (replaced.remove(name)) {
        taken.add(name);
      }
    }
    return taken;
  }

  /**
   * Stops every sandbox and withdraws the apps from {@code bus} (null: not connected, nothing to
   * withdraw). Never throws.
   */
  void stopAll(RedisLocalBus bus) {
    for (DeployedApp app : apps.all()) {
      try {
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
}
