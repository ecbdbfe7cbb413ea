package dev.sand.agent.apps;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.bus.EventCodec;
import dev.sand.bus.Queues;
import dev.sand.bus.redis.LocalBusException;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.config.ClusterConfig;
import dev.sand.config.SandboxConfig;
import dev.sand.sandbox.SandboxException;
import dev.sand.sandbox.SandboxId;
import dev.sand.sandbox.SandboxInfo;
import dev.sand.sandbox.SandboxRuntime;
import dev.sand.sandbox.SandboxSpec;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deploys applications into sandboxes on this host and keeps them running.
 *
 * <p>Deploy: unpack → validate (Python) → install requirements → Redis ACL user → sandbox (Docker
 * container or process group running {@code python -m sand_worker}, which forks one grain worker
 * per grain) → wait until every grain worker is ready → publish the metadata at {@code
 * sand:app:<app>}, which is what makes the app invocable. Undeploy removes all of it and fails the
 * executions still queued, so that none is lost silently.
 *
 * <p>{@link #watch} (called periodically) restarts a sandbox that died and reports it in the app's
 * log. Thread-safe: calls for one app are serialized; different apps proceed in parallel.
 */
public final class Deployer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Deployer.class);
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(90);
  private static final Duration PIP_TIMEOUT = Duration.ofMinutes(10);
  private static final Duration STOP_GRACE = Duration.ofSeconds(3);
  private static final Duration RESULT_TTL = Duration.ofHours(1);
  private static final int EVENT_LOG_LINES = 200;
  private static final String SANDBOX_APP = "/app";
  private static final String SANDBOX_RUN = "/sand/run";

  /** One line of deploy progress, for the NDJSON stream. */
  public record Progress(String phase, double elapsedS) {}

  private final ClusterConfig config;
  private final Supplier<RedisLocalBus> redis;
  private final Supplier<SandboxRuntime> docker;
  private final SandboxRuntime processes;
  private final Clock clock;
  private final ObjectMapper mapper;
  private final AppDescriber describer;
  private final Path appsDir;
  private final Path logsDir;
  private final Map<String, DeployedApp> apps = new ConcurrentHashMap<>();
  private final Map<String, Object> locks = new ConcurrentHashMap<>();
  private final Map<String, Deque<String>> events = new ConcurrentHashMap<>();
  private final SecureRandom random = new SecureRandom();

  /**
   * @param redis the local bus once connected (null before)
   * @param docker the Docker runtime once connected (null before, or when Docker is off)
   * @param processes the process runtime (always available)
   */
  public Deployer(
      ClusterConfig config,
      Supplier<RedisLocalBus> redis,
      Supplier<SandboxRuntime> docker,
      SandboxRuntime processes,
      Clock clock,
      ObjectMapper mapper) {
    this.config = config;
    this.redis = redis;
    this.docker = docker;
    this.processes = processes;
    this.clock = clock;
    this.mapper = mapper;
    SandboxConfig sandbox = config.sandbox();
    this.describer = new AppDescriber(sandbox.python(), pythonPath(sandbox.sourceDirs()), mapper);
    this.appsDir = config.stateDir().resolve("apps");
    this.logsDir = config.stateDir().resolve("logs").resolve("apps");
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
    SandboxRuntime runtime = runtimeFor(chosen);
    Path incoming = appsDir.resolve(".incoming-" + UUID.randomUUID());
    try {
      phase.accept("unpacking " + archive.length / 1024 + " KiB");
      AppArchive.unpack(archive, incoming);
      phase.accept("validating");
      ObjectNode description = describer.describe(incoming);
      String name = description.path("name").asText();
      synchronized (lockOf(name)) {
        return deployLocked(
            name, description, incoming, new Placement(chosen, runtime, options), bus, phase);
      }
    } finally {
      deleteTree(incoming);
    }
  }

  /** Where and how the app's sandbox runs. */
  private record Placement(
      SandboxConfig.Backend backend, SandboxRuntime runtime, DeployOptions options) {}

  private ObjectNode deployLocked(
      String name,
      ObjectNode description,
      Path incoming,
      Placement placement,
      RedisLocalBus bus,
      Consumer<String> phase) {
    SandboxConfig.Backend backend = placement.backend();
    SandboxRuntime runtime = placement.runtime();
    DeployedApp previous = apps.get(name);
    int version = previous == null ? 1 : previous.version() + 1;
    List<String> grains = new ArrayList<>();
    description.path("grains").forEach(g -> grains.add(g.asText()));
    for (String remote : placement.options().remoteGrains()) {
      if (!grains.contains(remote)) {
        throw new DeployException(
            400,
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
      installRequirements(incoming, requirements.asText());
    }
    Path dir = appsDir.resolve(name).resolve("v" + version);
    move(incoming, dir);
    if (previous != null) {
      phase.accept("stopping version " + previous.version());
      stopSandbox(previous);
    }
    String user = "sand-app-" + name;
    String password = HexFormat.of().formatHex(seed());
    createAclUser(bus, name, user, password);
    bus.delete(grains.stream().map(g -> Queues.ready(name, g)).toArray(String[]::new));
    phase.accept("starting the " + backend.wireName() + " sandbox");
    SandboxSpec spec =
        sandboxSpec(name, dir, description, placement, user, password, grains.size());
    SandboxId sandbox;
    try {
      sandbox = runtime.create(spec);
      runtime.start(sandbox);
    } catch (SandboxException e) {
      deleteAclUser(bus, user);
      throw new DeployException(
          503, "cannot start the sandbox of '" + name + "': " + e.getMessage());
    }
    DeployedApp app =
        new DeployedApp(name, version, dir, backend, runtime, sandbox, description, grains, user);
    phase.accept("waiting for " + grains.size() + " grain worker(s)");
    try {
      awaitWorkers(app, bus);
    } catch (DeployException e) {
      removeSandbox(app);
      deleteAclUser(bus, user);
      deleteTree(dir);
      if (previous != null) {
        apps.remove(name);
        bus.delete(Queues.app(name));
      }
      throw e;
    }
    ObjectNode metadata = description.deepCopy();
    metadata.put("version", version);
    metadata.put("backend", backend.wireName());
    metadata.put("backups", placement.options().backups());
    metadata.putPOJO("remote_grains", placement.options().remoteGrains());
    metadata.put("host", config.hostId());
    metadata.put("deployed_at", Instant.now(clock).toString());
    bus.set(Queues.app(name), bytes(metadata), null);
    DeployedApp deployed =
        new DeployedApp(name, version, dir, backend, runtime, sandbox, metadata, grains, user);
    apps.put(name, deployed);
    if (previous != null) {
      deleteTree(previous.dir());
    }
    note(
        name,
        "deployed version " + version + " (" + backend.wireName() + " sandbox " + sandbox + ")");
    LOG.atInfo()
        .addKeyValue("app", name)
        .addKeyValue("version", version)
        .addKeyValue("backend", backend.wireName())
        .log("app deployed");
    return metadata;
  }

  /**
   * Removes {@code name}: its sandbox, Redis user, queues, data and files. Executions still queued
   * fail with an error saying the app was undeployed. Blocking.
   *
   * @throws DeployException (404) when no such app is deployed
   */
  public void undeploy(String name) {
    synchronized (lockOf(name)) {
      DeployedApp app = apps.remove(name);
      if (app == null) {
        throw new DeployException(404, "no application '" + name + "' is deployed");
      }
      RedisLocalBus bus = requireRedis();
      bus.delete(Queues.app(name));
      removeSandbox(app);
      failQueued(bus, app);
      deleteAclUser(bus, app.redisUser());
      List<String> keys = new ArrayList<>();
      for (String pattern : Queues.appOwnedPatterns(name)) {
        keys.addAll(scan(bus, pattern));
      }
      bus.delete(keys.toArray(String[]::new));
      deleteTree(appsDir.resolve(name));
      note(name, "undeployed version " + app.version());
      LOG.atInfo().addKeyValue("app", name).log("app undeployed");
    }
  }

  /** The metadata of every deployed app, by name. */
  public List<ObjectNode> list() {
    return apps.values().stream()
        .sorted(Comparator.comparing(DeployedApp::name))
        .map(this::withState)
        .toList();
  }

  /** The metadata of {@code name} with its sandbox's state, or empty. */
  public Optional<ObjectNode> describe(String name) {
    return Optional.ofNullable(apps.get(name)).map(this::withState);
  }

  /**
   * The last {@code tail} lines of the app's sandbox output (grain workers' logs, tracebacks),
   * after the agent's own notes about it (deploys, restarts).
   *
   * @throws DeployException (404) when no such app is deployed
   */
  public String logs(String name, int tail) {
    DeployedApp app = apps.get(name);
    if (app == null) {
      throw new DeployException(404, "no application '" + name + "' is deployed");
    }
    StringBuilder out = new StringBuilder();
    for (String line : events.getOrDefault(name, new ArrayDeque<>())) {
      out.append("[agent] ").append(line).append('\n');
    }
    try {
      out.append(app.runtime().logs(app.sandbox(), tail));
    } catch (SandboxException e) {
      out.append("[agent] cannot read the sandbox's output: ").append(e.getMessage()).append('\n');
    }
    return out.toString();
  }

  /** The names of every deployed app (for the timer and recovery loops). */
  public boolean isDeployed(String name) {
    return apps.containsKey(name);
  }

  /**
   * Restarts every sandbox that is no longer running and reports it in the app's log. Returns the
   * apps whose sandbox was restarted (their in-flight events need replaying). Never throws.
   */
  public List<String> watch() {
    List<String> restarted = new ArrayList<>();
    Map<SandboxRuntime, List<SandboxInfo>> states = new LinkedHashMap<>();
    for (DeployedApp app : apps.values()) {
      synchronized (lockOf(app.name())) {
        if (apps.get(app.name()) != app) {
          continue;
        }
        try {
          List<SandboxInfo> owned =
              states.computeIfAbsent(app.runtime(), SandboxRuntime::listOwned);
          String state =
              owned.stream()
                  .filter(s -> s.id().equals(app.sandbox()))
                  .map(SandboxInfo::state)
                  .findFirst()
                  .orElse("missing");
          if (state.startsWith("running")) {
            continue;
          }
          note(app.name(), "sandbox " + app.sandbox() + " is " + state + "; restarting it");
          LOG.atWarn()
              .addKeyValue("app", app.name())
              .addKeyValue("state", state)
              .log("sandbox died; restarting");
          app.runtime().start(app.sandbox());
          restarted.add(app.name());
        } catch (RuntimeException e) {
          LOG.atWarn()
              .addKeyValue("app", app.name())
              .addKeyValue("error", e.toString())
              .log("sandbox check failed");
        }
      }
    }
    return restarted;
  }

  /** Notes an event about {@code app} in the log {@code sand logs} shows. */
  public void note(String app, String line) {
    Deque<String> log = events.computeIfAbsent(app, k -> new ArrayDeque<>());
    synchronized (log) {
      log.addLast(Instant.now(clock) + " " + line);
      while (log.size() > EVENT_LOG_LINES) {
        log.removeFirst();
      }
    }
  }

  /**
   * Stops every sandbox and withdraws the apps from the local bus: a stopped agent runs no app, so
   * frontends must answer 404 rather than queue events nobody takes. Never throws.
   */
  @Override
  public void close() {
    for (DeployedApp app : apps.values()) {
      try {
        RedisLocalBus bus = redis.get();
        if (bus != null) {
          bus.delete(Queues.app(app.name()));
        }
        removeSandbox(app);
      } catch (RuntimeException e) {
        LOG.atWarn()
            .addKeyValue("app", app.name())
            .addKeyValue("error", e.toString())
            .log("stop failed");
      }
    }
  }

  // -- helpers ---------------------------------------------------------------------------------

  private ObjectNode withState(DeployedApp app) {
    ObjectNode node = app.metadata().deepCopy();
    String state;
    try {
      state =
          app.runtime().listOwned().stream()
              .filter(s -> s.id().equals(app.sandbox()))
              .map(SandboxInfo::state)
              .findFirst()
              .orElse("missing");
    } catch (RuntimeException e) {
      state = "unknown (" + e.getMessage() + ")";
    }
    node.put("sandbox", app.sandbox().value());
    node.put("state", state);
    return node;
  }

  private SandboxSpec sandboxSpec(
      String name,
      Path dir,
      ObjectNode description,
      Placement placement,
      String user,
      String password,
      int grainCount) {
    SandboxConfig sandbox = config.sandbox();
    SandboxConfig.Backend backend = placement.backend();
    JsonNode limits = description.path("limits");
    int memoryMb = limits.path("memory_mb").asInt(512);
    Map<String, String> env = new LinkedHashMap<>();
    env.put("SAND_APP", name);
    env.put("SAND_HOST_ID", config.hostId());
    env.put("SAND_REDIS_USER", user);
    env.put("SAND_REDIS_PASSWORD", password);
    env.put("SAND_MAX_CONCURRENCY", String.valueOf(limits.path("max_concurrency").asInt(64)));
    env.put("PYTHONDONTWRITEBYTECODE", "1");
    env.put("PYTHONUNBUFFERED", "1");
    env.put("SAND_BACKUP", placement.options().backups() ? "1" : "0");
    env.put("SAND_REMOTE_GRAINS", String.join(",", placement.options().remoteGrains()));
    Path site = dir.resolve(".sand-site");
    List<SandboxSpec.Mount> mounts = new ArrayList<>();
    List<String> command;
    if (backend == SandboxConfig.Backend.DOCKER) {
      Path socket = config.redis().socket();
      mounts.add(new SandboxSpec.Mount(dir.toString(), SANDBOX_APP, true));
      mounts.add(new SandboxSpec.Mount(socket.getParent().toString(), SANDBOX_RUN, false));
      List<String> path = new ArrayList<>();
      for (int i = 0; i < sandbox.sourceDirs().size(); i++) {
        String inside = "/sand/src/" + i;
        mounts.add(new SandboxSpec.Mount(sandbox.sourceDirs().get(i).toString(), inside, true));
        path.add(inside);
      }
      if (sandbox.siteDir() != null) {
        mounts.add(new SandboxSpec.Mount(sandbox.siteDir().toString(), "/sand/site", true));
        path.add("/sand/site");
      }
      path.add(SANDBOX_APP + "/.sand-site");
      env.put("SAND_APP_DIR", SANDBOX_APP);
      env.put("SAND_REDIS_SOCKET", SANDBOX_RUN + "/" + socket.getFileName());
      env.put("PYTHONPATH", String.join(":", path));
      command = List.of("python3", "-m", "sand_worker");
    } else {
      env.put("SAND_APP_DIR", dir.toString());
      env.put("SAND_REDIS_SOCKET", config.redis().socket().toString());
      env.put("PYTHONPATH", pythonPath(sandbox.sourceDirs()) + ":" + site);
      command = List.of(sandbox.python().toString(), "-m", "sand_worker");
    }
    // the app's memory_mb bounds one grain instance; the sandbox holds a worker per grain plus
    // instances in flight, so it gets one share per grain and one for bursts
    int sandboxMemoryMb = Math.min(memoryMb * (grainCount + 1), 8192);
    return new SandboxSpec(
        name,
        sandbox.baseImage(),
        sandboxMemoryMb,
        sandbox.cpus(),
        sandbox.pidsLimit(),
        logsDir.resolve(name + ".log"),
        mounts,
        env,
        command);
  }

  private void awaitWorkers(DeployedApp app, RedisLocalBus bus) {
    long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
    while (true) {
      long ready =
          app.grains().stream()
              .filter(g -> bus.get(Queues.ready(app.name(), g)).isPresent())
              .count();
      if (ready == app.grains().size()) {
        return;
      }
      String state =
          app.runtime().listOwned().stream()
              .filter(s -> s.id().equals(app.sandbox()))
              .map(SandboxInfo::state)
              .findFirst()
              .orElse("missing");
      if (!state.startsWith("running") || System.nanoTime() > deadline) {
        String why =
            state.startsWith("running")
                ? "only "
                    + ready
                    + " of "
                    + app.grains().size()
                    + " grain workers were ready after "
                    + READY_TIMEOUT.toSeconds()
                    + " s"
                : "the sandbox is " + state;
        String output;
        try {
          output = AppDescriber.lastLines(app.runtime().logs(app.sandbox(), 30), 30);
        } catch (RuntimeException e) {
          output = "(no output: " + e.getMessage() + ")";
        }
        throw new DeployException(
            500,
            "the grain workers of '"
                + app.name()
                + "' did not start: "
                + why
                + "; output:\n"
                + output);
      }
      sleep(50);
    }
  }

  private void installRequirements(Path dir, String file) {
    Path requirements = dir.resolve(file).normalize();
    if (!requirements.startsWith(dir)) {
      throw new DeployException(
          400, "app.yaml: requirements: must stay inside the app, got " + file);
    }
    ProcessBuilder builder =
        new ProcessBuilder(
            config.sandbox().python().toString(),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
            "--target",
            dir.resolve(".sand-site").toString(),
            "-r",
            requirements.toString());
    builder.redirectErrorStream(true);
    try {
      Path log = Files.createTempFile("sand-pip", ".log");
      builder.redirectOutput(log.toFile());
      Process process = builder.start();
      boolean done = process.waitFor(PIP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
      String output = Files.readString(log);
      Files.deleteIfExists(log);
      if (!done) {
        process.destroyForcibly();
        throw new DeployException(
            400,
            file + ": installing the requirements took over " + PIP_TIMEOUT.toMinutes() + " min");
      }
      if (process.exitValue() != 0) {
        throw new DeployException(
            400,
            file
                + ": pip could not install the requirements:\n"
                + AppDescriber.lastLines(output, 15));
      }
    } catch (IOException e) {
      throw new DeployException(500, "cannot run pip: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new DeployException(500, "interrupted while installing requirements");
    }
  }

  /** One ACL user per app: its own keys read-write, the shared queues write-only, nothing else. */
  private static void createAclUser(RedisLocalBus bus, String app, String user, String password) {
    CommandArgs<byte[], byte[]> args =
        new CommandArgs<>(ByteArrayCodec.INSTANCE)
            .add("SETUSER")
            .add(user)
            .add("reset")
            .add("on")
            .add(">" + password)
            .add("resetchannels");
    for (String pattern : Queues.appOwnedPatterns(app)) {
      args.add("~" + pattern);
    }
    for (String pattern : Queues.appWriteOnlyPatterns()) {
      args.add("%W~" + pattern);
    }
    args.add("+@all").add("-@dangerous").add("-@admin").add("-@pubsub");
    bus.call(
        "ACL SETUSER " + user,
        c -> c.dispatch(CommandType.ACL, new StatusOutput<>(ByteArrayCodec.INSTANCE), args));
  }

  private static void deleteAclUser(RedisLocalBus bus, String user) {
    try {
      bus.call(
          "ACL DELUSER " + user,
          c ->
              c.dispatch(
                  CommandType.ACL,
                  new io.lettuce.core.output.IntegerOutput<>(ByteArrayCodec.INSTANCE),
                  new CommandArgs<>(ByteArrayCodec.INSTANCE).add("DELUSER").add(user)));
    } catch (LocalBusException e) {
      LOG.atWarn()
          .addKeyValue("user", user)
          .addKeyValue("error", e.getMessage())
          .log("ACL DELUSER failed");
    }
  }

  /** Fails every execution whose event still waits in the app's queues. */
  private void failQueued(RedisLocalBus bus, DeployedApp app) {
    for (String grain : app.grains()) {
      String queue = Queues.grain(app.name(), grain);
      List<byte[]> waiting =
          bus.call("LRANGE " + queue, c -> c.lrange(queue.getBytes(StandardCharsets.UTF_8), 0, -1));
      for (byte[] raw : waiting) {
        try {
          EventMessage event = EventCodec.decode(raw);
          fail(
              bus,
              event,
              "States.Runtime",
              "application '" + app.name() + "' was undeployed before this execution finished");
        } catch (RuntimeException e) {
          LOG.atWarn()
              .addKeyValue("queue", queue)
              .addKeyValue("error", e.toString())
              .log("unreadable event dropped");
        }
      }
    }
  }

  /**
   * Ends the execution of {@code source} with an error: stores the FAILED document and answers a
   * synchronous caller. Used when the platform, not the workflow, ends an execution.
   */
  public void fail(RedisLocalBus bus, EventMessage source, String error, String cause) {
    ObjectNode doc = mapper.createObjectNode();
    doc.put("execution_id", source.getExecution_id());
    doc.put("app", source.getApp());
    doc.put("workflow", source.getWorkflow());
    doc.put("finished_ms", clock.millis());
    doc.put("status", "FAILED");
    doc.put("error", error);
    doc.put("cause", cause);
    byte[] body = bytes(doc);
    bus.set(Queues.result(source.getExecution_id()), body, RESULT_TTL);
    EventMessage result =
        new EventMessage()
            .setExecution_id(source.getExecution_id())
            .setEvent_id(UUID.randomUUID().toString().replace("-", ""))
            .setApp(source.getApp())
            .setWorkflow(source.getWorkflow())
            .setKind(EventKind.ERROR)
            .setFlag(EventFlag.FAILED)
            .setPayload(body)
            .setError(error)
            .setCause(cause)
            .setHost(config.hostId())
            .setCreated_ms(clock.millis())
            .setReply_to(source.getReply_to());
    if (source.getReply_to() != null && !source.getReply_to().isEmpty()) {
      bus.push(Queues.reply(source.getReply_to()), result);
    }
    bus.push(Queues.agent(config.hostId()), result);
  }

  private static List<String> scan(RedisLocalBus bus, String pattern) {
    return bus.call(
        "SCAN " + pattern,
        c -> {
          List<String> keys = new ArrayList<>();
          ScanIterator.scan(c, ScanArgs.Builder.matches(pattern).limit(500))
              .forEachRemaining(k -> keys.add(new String(k, StandardCharsets.UTF_8)));
          return keys;
        });
  }

  private void stopSandbox(DeployedApp app) {
    try {
      app.runtime().stop(app.sandbox(), STOP_GRACE);
    } catch (SandboxException e) {
      LOG.atWarn()
          .addKeyValue("app", app.name())
          .addKeyValue("error", e.getMessage())
          .log("stop failed");
    }
    removeSandbox(app);
  }

  private static void removeSandbox(DeployedApp app) {
    try {
      app.runtime().remove(app.sandbox());
    } catch (SandboxException e) {
      LOG.atWarn()
          .addKeyValue("app", app.name())
          .addKeyValue("error", e.getMessage())
          .log("remove failed");
    }
  }

  private SandboxRuntime runtimeFor(SandboxConfig.Backend backend) {
    if (backend == SandboxConfig.Backend.PROCESS) {
      return processes;
    }
    SandboxRuntime runtime = docker.get();
    if (runtime == null) {
      throw new DeployException(
          503,
          "the docker backend is not available on this host (docker is off or not reachable); deploy with backend=process");
    }
    return runtime;
  }

  private RedisLocalBus requireRedis() {
    RedisLocalBus bus = redis.get();
    if (bus == null) {
      throw new DeployException(
          503, "the local bus (redis at " + config.redis().socket() + ") is not connected yet");
    }
    return bus;
  }

  private Object lockOf(String name) {
    return locks.computeIfAbsent(name, k -> new Object());
  }

  private byte[] seed() {
    byte[] seed = new byte[24];
    random.nextBytes(seed);
    return seed;
  }

  private byte[] bytes(JsonNode node) {
    try {
      return mapper.writeValueAsBytes(node);
    } catch (IOException e) {
      throw new IllegalStateException("cannot encode " + node, e);
    }
  }

  private static String pythonPath(List<Path> dirs) {
    return String.join(":", dirs.stream().map(Path::toString).toList());
  }

  private static void move(Path from, Path to) {
    try {
      deleteTree(to);
      Files.createDirectories(to.getParent());
      Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new DeployException(500, "cannot move the app into " + to + ": " + e.getMessage());
    }
  }

  static void deleteTree(Path root) {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(root)) {
      walk.sorted(Comparator.reverseOrder())
          .forEach(
              p -> {
                try {
                  Files.deleteIfExists(p);
                } catch (IOException e) {
                  LOG.atWarn()
                      .addKeyValue("path", p)
                      .addKeyValue("error", e.toString())
                      .log("delete failed");
                }
              });
    } catch (IOException e) {
      LOG.atWarn()
          .addKeyValue("path", root)
          .addKeyValue("error", e.toString())
          .log("delete failed");
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new DeployException(500, "interrupted");
    }
  }
}
