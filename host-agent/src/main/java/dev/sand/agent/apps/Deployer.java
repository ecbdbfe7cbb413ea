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
import dev.sand.store.AppRecord;
import dev.sand.store.cassandra.CassandraStore;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Function;
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
 * <p>Every deploy is recorded in the global data layer ({@link AppRecords}); {@link #sync} (called
 * at start-up and periodically) deploys what is on record and not here, so apps come back after a
 * restart and every host of a cluster runs them (decision 0011). {@link #watch} (called
 * periodically) restarts a sandbox that died ({@link Watchdog}). Thread-safe: calls for one app are
 * serialized; different apps proceed in parallel.
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

  // a recorded version that failed to deploy here is not tried again until a newer one is recorded
  private final Map<String, Integer> failedRestores = new ConcurrentHashMap<>();
  // the apps this host runs because they are on record (so the record's removal undeploys them)
  private final Set<String> recorded = ConcurrentHashMap.newKeySet();
  // apps deployed in the cluster whose placement leaves this host out (decision 0013): their
  // metadata, shown by list/describe; no sandbox, no sand:app key, so no invocation comes here
  private final Map<String, ObjectNode> elsewhere = new ConcurrentHashMap<>();

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
  private final WorkflowSources sources = new WorkflowSources();
  private final AppLog log;
  private final Watchdog watchdog;
  private final Set<String> replaced = ConcurrentHashMap.newKeySet();
  private final AppRecords records;
  private final List<String> clusterHosts;
  private final ObjectMapper mapper;
  private final Consumer<? super ObjectNode> prerequisites;

  /**
   * @param executions fails the executions an undeploy leaves behind
   * @param cassandra the global data layer once connected (null before): deployments are recorded
   *     there
   * @param prerequisites checks a new deploy's description against the cluster (the topics of its
   *     triggers exist) and throws {@link DeployException} naming what is missing; not applied to
   *     deployments on record brought back
   */
  public Deployer(
      ClusterConfig config,
      Runtimes runtimes,
      Executions executions,
      Supplier<CassandraStore> cassandra,
      Clock clock,
      ObjectMapper mapper,
      Consumer<? super ObjectNode> prerequisites) {
    this.prerequisites = prerequisites;
    this.records = new AppRecords(cassandra, mapper);
    this.clusterHosts = config.hosts().stream().map(h -> h.id()).toList();
    this.mapper = mapper;
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
    return deploy(archive, options, name -> options.owner(), progress, 0);
  }

  /**
   * Deploys {@code archive} as {@link #deploy(byte[], DeployOptions, Consumer)} does, for the owner
   * that {@code owner} gives for the app's name once it is read from the archive (decision 0017).
   *
   * @param owner the owner to record for the named app; throws {@link DeployException} when the
   *     caller may not deploy that name, before anything of the deploy happened
   */
  public ObjectNode deploy(
      byte[] archive,
      DeployOptions options,
      Function<String, Optional<String>> owner,
      Consumer<Progress> progress) {
    return deploy(archive, options, owner, progress, 0);
  }

  /**
   * Deploys {@code archive}; {@code pinned} > 0 deploys it as that version (a deployment on record,
   * brought back), else as the next version, recorded for every host.
   */
  private ObjectNode deploy(
      byte[] archive,
      DeployOptions requested,
      Function<String, Optional<String>> owner,
      Consumer<Progress> progress,
      int pinned) {
    long started = clock.millis();
    Consumer<String> phase =
        name -> progress.accept(new Progress(name, (clock.millis() - started) / 1000.0));
    RedisLocalBus bus = requireRedis();
    SandboxConfig.Backend chosen = requested.backend().orElse(config.sandbox().backend());
    phase.accept("unpacking " + archive.length / 1024 + " KiB");
    Path incoming = files.unpack(archive);
    try {
      phase.accept("validating");
      AppDescriber.Description described =
          describer.describe(incoming, clusterHosts, requested.placement());
      ObjectNode description = described.app();
      // refused here, before anything of the deploy happened, when above the operator's maxima
      AppLimits.of(description.path("limits"), config.sandbox().limits()).writeTo(description);
      if (pinned == 0) {
        prerequisites.accept(description);
      }
      String name = description.path("name").asText();
      DeployOptions options = requested.withOwner(owner.apply(name));
      Placement placement = Placement.of(description, clusterHosts);
      synchronized (apps.lockOf(name)) {
        int version = pinned > 0 ? pinned : Math.max(versionHere(name), records.version(name)) + 1;
        ObjectNode metadata;
        if (placement.runsOn(config.hostId())) {
          SandboxPlan plan = new SandboxPlan(chosen, runtimeFor(chosen), options, placement);
          metadata = deployLocked(name, version, description, incoming, plan, bus, phase);
          elsewhere.remove(name);
        } else {
          phase.accept("not placed on " + config.hostId() + ": runs on " + placement.hosts());
          metadata = notPlacedHere(name, version, description, options, placement);
        }
        if (pinned > 0) {
          recorded.add(name);
        } else {
          Optional<String> why = records.save(name, version, archive, options, clock.instant());
          if (why.isPresent()) {
            recorded.remove(name);
            log.note(
                name,
                "not recorded globally (it will not come back after a restart): " + why.get());
          } else {
            recorded.add(name);
          }
        }
        sources.put(name, described.workflowSources());
        return metadata;
      }
    } finally {
      AppFiles.deleteTree(incoming);
    }
  }

  /**
   * Validates the application in {@code archive} exactly as {@link #deploy} does (the same unpack
   * and the same Python rules) and changes nothing: no sandbox, no record, no metadata; the
   * unpacked files are deleted. Blocking (runs Python, a fraction of a second for a small app).
   *
   * @param options the deploy's options: its placement and remote grains are checked as well
   * @return the description a deploy would store as the app's metadata (without version)
   * @throws DeployException (INVALID) listing every problem, as a deploy would refuse the app
   */
  public ObjectNode validate(byte[] archive, DeployOptions options) {
    Path incoming = files.unpack(archive);
    try {
      ObjectNode description =
          describer.describe(incoming, clusterHosts, options.placement()).app();
      requireGrains(description, options.remoteGrains());
      AppLimits.of(description.path("limits"), config.sandbox().limits()).writeTo(description);
      prerequisites.accept(description);
      return description;
    } finally {
      AppFiles.deleteTree(incoming);
    }
  }

  /**
   * @throws DeployException (INVALID) naming the first of {@code remote} that is not a grain of the
   *     described app
   */
  private static void requireGrains(ObjectNode description, Set<String> remote) {
    List<String> all = new ArrayList<>();
    description.path("grains").forEach(g -> all.add(g.asText()));
    for (String grain : remote) {
      if (!all.contains(grain)) {
        throw new DeployException(
            DeployException.Reason.INVALID,
            "remote_grains: '"
                + grain
                + "' is not a grain of app '"
                + description.path("name").asText()
                + "'; grains: "
                + all);
      }
    }
  }

  /**
   * The definition of {@code workflow} in the deployed app {@code app}: {@code app, workflow, kind
   * (asl|native), file, definition (parsed), source (text)}; empty when either is unknown.
   */
  public Optional<ObjectNode> workflow(String app, String workflow) {
    if (describe(app).isEmpty()) {
      return Optional.empty();
    }
    return sources.find(app, workflow);
  }

  /**
   * Brings this host in line with the deployments on record: deploys what is recorded and not here
   * (or here in an older version), undeploys what this host runs because it was recorded and no
   * longer is. Called at start-up and periodically; blocking while it deploys; never throws.
   */
  public void sync() {
    Optional<Map<String, Integer>> onRecord = records.versions();
    if (onRecord.isEmpty()) {
      return;
    }
    onRecord.get().forEach(this::syncOne);
    elsewhere.keySet().removeIf(name -> !onRecord.get().containsKey(name));
    for (String name : List.copyOf(recorded)) {
      if (!onRecord.get().containsKey(name) && apps.contains(name)) {
        undeployIfUnrecorded(name);
      }
    }
  }

  /**
   * Undeploys {@code name} here if the record, read again under the app's lock, confirms it is
   * gone. The read at the start of {@link #sync} may predate a deploy through this host (an
   * undeploy and a deploy of the same name in quick succession): that deploy holds the lock until
   * its record is saved, so the second read sees it and the new deployment is left alone.
   */
  private void undeployIfUnrecorded(String name) {
    synchronized (apps.lockOf(name)) {
      Optional<Map<String, Integer>> now = records.versions();
      if (now.isEmpty() || now.get().containsKey(name) || !recorded.contains(name)) {
        return;
      }
      try {
        if (apps.contains(name)) {
          undeployLocally(name, "undeployed on another host");
        }
        sources.remove(name);
      } catch (RuntimeException e) {
        LOG.atWarn().addKeyValue("app", name).addKeyValue("error", e.toString()).log("sync");
      }
    }
  }

  /**
   * Records that {@code name} runs on other hosts only: stops a version running here (its queued
   * executions fail, saying why), keeps the metadata for list/describe.
   */
  private ObjectNode notPlacedHere(
      String name,
      int version,
      ObjectNode description,
      DeployOptions options,
      Placement placement) {
    if (apps.contains(name)) {
      undeployLocally(
          name, "moved to " + placement.hosts() + " by the placement of version " + version);
    }
    ObjectNode metadata = description.deepCopy();
    metadata.put("version", version);
    metadata.put("backups", options.backups());
    options.owner().ifPresent(o -> metadata.put("owner", o));
    metadata.set("placement", placement.toJson(mapper));
    metadata.putArray("local_grains");
    metadata.put("host", config.hostId());
    metadata.put("deployed_at", Instant.now(clock).toString());
    elsewhere.put(name, metadata);
    log.note(
        name, "version " + version + " is not placed on this host (" + placement.hosts() + ")");
    return metadata;
  }

  /** The version of {@code name} this host knows (running here or placed elsewhere), else 0. */
  private int versionHere(String name) {
    ObjectNode other = elsewhere.get(name);
    return Math.max(
        apps.find(name).map(DeployedApp::version).orElse(0),
        other == null ? 0 : other.path("version").asInt());
  }

  private void syncOne(String name, int version) {
    int here = versionHere(name);
    if (here >= version || failedRestores.getOrDefault(name, 0) >= version) {
      return;
    }
    Optional<AppRecord> record = records.load(name);
    if (record.isEmpty() || record.get().version() != version) {
      return; // changed meanwhile: the next round sees the new record
    }
    try {
      DeployOptions options = records.options(record.get().options());
      deploy(record.get().archive(), options, n -> options.owner(), progress -> {}, version);
      failedRestores.remove(name);
      log.note(name, "version " + version + " brought back from the deployment record");
    } catch (RuntimeException e) {
      failedRestores.put(name, version);
      log.note(name, "version " + version + " on record could not be deployed here: " + e);
      LOG.atWarn()
          .addKeyValue("app", name)
          .addKeyValue("version", version)
          .addKeyValue("error", e.toString())
          .log("deployment on record not brought back");
    }
  }

  /** The grains of every app deployed here, by app (the global bus subscribes to their topics). */
  public Map<String, List<String>> grainsByApp() {
    Map<String, List<String>> grains = new TreeMap<>();
    for (DeployedApp app : apps.all()) {
      grains.put(app.name(), app.grains());
    }
    return grains;
  }

  private ObjectNode deployLocked(
      String name,
      int version,
      ObjectNode description,
      Path incoming,
      SandboxPlan plan,
      RedisLocalBus bus,
      Consumer<String> phase) {
    SandboxConfig.Backend backend = plan.backend();
    Optional<DeployedApp> previous = apps.find(name);
    // only the grains placed here get a worker (and are awaited); the others are remote
    List<String> grains = plan.placement().grainsOn(config.hostId());
    requireGrains(description, plan.options().remoteGrains());
    JsonNode requirements = description.path("requirements");
    if (requirements.isTextual()) {
      phase.accept("installing requirements from " + requirements.asText());
      files.installRequirements(incoming, requirements.asText());
    }
    Path dir = files.place(incoming, name, version);
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
   * Removes {@code name}: its sandbox, Redis user, queues, data and files. Executions still queued
   * fail with an error saying the app was undeployed. Blocking.
   *
   * @throws DeployException (NOT_FOUND) when no such app is deployed
   */
  public void undeploy(String name) {
    synchronized (apps.lockOf(name)) {
      boolean onRecord = records.version(name) > 0;
      boolean placedElsewhere = elsewhere.remove(name) != null;
      if (!apps.contains(name) && !onRecord && !placedElsewhere) {
        throw AppRegistry.notDeployed(name);
      }
      records.delete(name);
      recorded.remove(name);
      sources.remove(name);
      if (apps.contains(name)) {
        undeployLocally(name, "undeployed");
      }
    }
  }

  /** Removes {@code name} from this host only; {@code why} goes to the app's log. */
  private void undeployLocally(String name, String why) {
    synchronized (apps.lockOf(name)) {
      DeployedApp app = apps.remove(name).orElseThrow(() -> AppRegistry.notDeployed(name));
      recorded.remove(name);
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
      log.note(name, why + " version " + app.version());
      LOG.atInfo().addKeyValue("app", name).log("app undeployed");
    }
  }

  /**
   * The sandboxes of this host: per app deployed here, its sandbox's state and its grain workers'
   * health ({@link SandboxReport}). Blocking (asks the runtimes and Redis).
   */
  public com.fasterxml.jackson.databind.node.ArrayNode sandboxes() {
    return SandboxReport.of(apps.all(), runtimes.redis().get(), mapper);
  }

  /** The metadata of every deployed app, by name. */
  public List<ObjectNode> list() {
    List<ObjectNode> all = new ArrayList<>(apps.all().stream().map(Deployer::withState).toList());
    elsewhere.values().forEach(m -> all.add(notHere(m)));
    return all;
  }

  /** The metadata of the apps deployed on this host, as stored (not to be changed). */
  public List<ObjectNode> deployedHere() {
    return apps.all().stream().map(DeployedApp::metadata).toList();
  }

  /** The metadata of {@code name} with its sandbox's state, or empty. */
  public Optional<ObjectNode> describe(String name) {
    return apps.find(name)
        .map(Deployer::withState)
        .or(() -> Optional.ofNullable(elsewhere.get(name)).map(Deployer::notHere));
  }

  private static ObjectNode notHere(ObjectNode metadata) {
    ObjectNode node = metadata.deepCopy();
    node.putNull("sandbox");
    node.put("state", "not placed on this host");
    return node;
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
   * apps whose sandbox was restarted or replaced by a new version since the last call (their
   * in-flight events need replaying: a redeploy stops the old sandbox with whatever its instances
   * had taken). Never throws.
   */
  public List<String> watch() {
    List<String> replay = new ArrayList<>(watchdog.restartDead());
    for (String name : List.copyOf(replaced)) {
      if (replaced.remove(name) && !replay.contains(name)) {
        replay.add(name);
      }
    }
    return replay;
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
