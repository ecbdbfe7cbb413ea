package dev.sand.agent.apps;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.config.ClusterConfig;
import dev.sand.config.SandboxConfig;
import dev.sand.sandbox.SandboxRuntime;
import dev.sand.store.AppRecord;
import dev.sand.store.cassandra.CassandraStore;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deploys applications into sandboxes on this host and keeps them running; coordinates the classes
 * that do each step.
 *
 * <p>Deploy: unpack ({@link AppFiles}) → validate ({@link AppValidation}) → on a host the placement
 * names, install ({@link AppInstaller}: requirements, Redis ACL user, sandbox running {@code python
 * -m sand_worker}, wait for every grain worker, publish {@code sand:app:<app>}, which is what makes
 * the app invocable); elsewhere, keep the metadata only ({@link PlacedElsewhere}). Undeploy removes
 * all of it and fails the executions still queued, so that none is lost silently.
 *
 * <p>Every deploy is recorded in the global data layer ({@link AppRecords}); {@link #sync} (called
 * at start-up and periodically, {@link RecordSync}) deploys what is on record and not here, so apps
 * come back after a restart and every host of a cluster runs them (decision 0011). {@link #watch}
 * (called periodically) restarts a sandbox that died ({@link Watchdog}). Thread-safe: calls for one
 * app are serialized; different apps proceed in parallel.
 */
public final class Deployer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Deployer.class);

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
      Supplier<RedisLocalBus> redis, Supplier<SandboxRuntime> docker, SandboxRuntime processes) {
    /**
     * The runtime of {@code backend}.
     *
     * @throws DeployException (UNAVAILABLE) when Docker is off or not connected
     */
    SandboxRuntime of(SandboxConfig.Backend backend) {
      if (backend == SandboxConfig.Backend.PROCESS) {
        return processes;
      }
      SandboxRuntime runtime = docker.get();
      if (runtime == null) {
        throw new DeployException(
            DeployException.Reason.UNAVAILABLE,
            "the docker backend is not available on this host (docker is off or not reachable);"
                + " deploy with backend=process");
      }
      return runtime;
    }
  }

  private final PlacedElsewhere elsewhere;

  private final ClusterConfig config;
  private final Runtimes runtimes;
  private final Clock clock;
  private final AppValidation validation;
  private final AppFiles files;
  private final AppInstaller installer;
  private final AppRegistry apps = new AppRegistry();
  private final WorkflowSources sources = new WorkflowSources();
  private final AppLog log;
  private final Watchdog watchdog;
  private final AppRecords records;
  private final RecordSync recordSync;
  private final ObjectMapper mapper;

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
    this.config = config;
    this.runtimes = runtimes;
    this.clock = clock;
    this.mapper = mapper;
    this.records = new AppRecords(cassandra, mapper);
    this.validation = new AppValidation(config, mapper, prerequisites);
    this.files = new AppFiles(config.stateDir().resolve("apps"), config.sandbox().python());
    this.log = new AppLog(clock);
    this.installer = new AppInstaller(config, apps, files, log, executions, clock, mapper);
    this.watchdog = new Watchdog(apps, log);
    this.recordSync = new RecordSync(records, log, apps);
    this.elsewhere = new PlacedElsewhere(config.hostId(), clock, mapper);
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
      AppDescriber.Description described = validation.describe(incoming, requested, pinned == 0);
      ObjectNode description = described.app();
      String name = description.path("name").asText();
      DeployOptions options = requested.withOwner(owner.apply(name));
      Placement placement = Placement.of(description, validation.clusterHosts());
      synchronized (apps.lockOf(name)) {
        int version = pinned > 0 ? pinned : Math.max(versionHere(name), records.version(name)) + 1;
        ObjectNode metadata;
        if (placement.runsOn(config.hostId())) {
          SandboxPlan plan = new SandboxPlan(chosen, runtimes.of(chosen), options, placement);
          AppInstaller.Install install =
              new AppInstaller.Install(name, version, description, incoming, plan);
          metadata = installer.install(install, bus, phase);
          elsewhere.remove(name);
        } else {
          phase.accept("not placed on " + config.hostId() + ": runs on " + placement.hosts());
          metadata = notPlacedHere(name, version, description, options, placement);
        }
        if (pinned > 0) {
          recordSync.mark(name, true);
        } else {
          recordSync.save(name, version, archive, options, clock.instant());
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
      return validation.validate(incoming, options);
    } finally {
      AppFiles.deleteTree(incoming);
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
    recordSync.sync(new SyncSteps()).ifPresent(elsewhere::retainAll);
  }

  /** The deployer's steps as a sync takes them. */
  private final class SyncSteps implements RecordSync.Host {
    @Override
    public int versionHere(String name) {
      return Deployer.this.versionHere(name);
    }

    @Override
    public void deploy(AppRecord record, DeployOptions options) {
      Deployer.this.deploy(
          record.archive(), options, n -> options.owner(), progress -> {}, record.version());
    }

    @Override
    public void undeployHere(String name) {
      if (apps.contains(name)) {
        undeployLocally(name, "undeployed on another host");
      }
      sources.remove(name);
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
    ObjectNode metadata = elsewhere.put(name, version, description, options, placement);
    log.note(
        name, "version " + version + " is not placed on this host (" + placement.hosts() + ")");
    return metadata;
  }

  /** The version of {@code name} this host knows (running here or placed elsewhere), else 0. */
  private int versionHere(String name) {
    return Math.max(apps.find(name).map(DeployedApp::version).orElse(0), elsewhere.version(name));
  }

  /** The grains of every app deployed here, by app (the global bus subscribes to their topics). */
  public Map<String, List<String>> grainsByApp() {
    return apps.grainsByApp();
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
      boolean placedElsewhere = elsewhere.remove(name);
      if (!apps.contains(name) && !onRecord && !placedElsewhere) {
        throw AppRegistry.notDeployed(name);
      }
      records.delete(name);
      recordSync.mark(name, false);
      sources.remove(name);
      if (apps.contains(name)) {
        undeployLocally(name, "undeployed");
      }
    }
  }

  /** Removes {@code name} from this host only; {@code why} goes to the app's log. */
  private void undeployLocally(String name, String why) {
    synchronized (apps.lockOf(name)) {
      recordSync.mark(name, false);
      installer.uninstall(name, why, requireRedis());
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
    List<ObjectNode> all =
        new ArrayList<>(apps.all().stream().map(DeployedApp::withState).toList());
    all.addAll(elsewhere.list());
    return all;
  }

  /** The metadata of the apps deployed on this host, as stored (not to be changed). */
  public List<ObjectNode> deployedHere() {
    return apps.all().stream().map(DeployedApp::metadata).toList();
  }

  /** The metadata of {@code name} with its sandbox's state, or empty. */
  public Optional<ObjectNode> describe(String name) {
    return apps.find(name).map(DeployedApp::withState).or(() -> elsewhere.describe(name));
  }

  /**
   * The last {@code tail} lines of the app's sandbox output (grain workers' logs, tracebacks),
   * after the agent's own notes about it (deploys, restarts).
   *
   * @throws DeployException (NOT_FOUND) when no such app is deployed
   */
  public String logs(String name, int tail) {
    return log.withOutput(apps.require(name), tail);
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
    for (String name : installer.takeReplaced()) {
      if (!replay.contains(name)) {
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
    installer.stopAll(runtimes.redis().get());
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
