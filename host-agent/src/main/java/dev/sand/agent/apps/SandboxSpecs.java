package dev.sand.agent.apps;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.config.ClusterConfig;
import dev.sand.config.SandboxConfig;
import dev.sand.contracts.TaskTokens;
import dev.sand.contracts.contractsConstants;
import dev.sand.sandbox.SandboxSpec;
import dev.sand.sandbox.SandboxUsers;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * Describes the sandbox of an app: {@code python -m sand_worker} (which forks one grain worker per
 * grain) with the environment the worker reads ({@code ENV_*} of contracts.thrift), the mounts and
 * paths of the chosen backend, and the limits. Pure and thread-safe.
 */
final class SandboxSpecs {
  private static final String SANDBOX_APP = "/app";
  private static final String SANDBOX_RUN = "/sand/run";
  private static final int DEFAULT_MAX_CONCURRENCY = 64;
  // the one writable place of a sandbox (decision 0016)
  private static final String SANDBOX_TMP = "/tmp";
  private static final String UIDS_FILE = "sandbox/uids";

  /**
   * What one sandbox is made for.
   *
   * @param app the application's name
   * @param dir its unpacked directory on the host
   * @param description what the validator said about it (grains, limits)
   * @param plan the backend and the deploy's options
   * @param credentials the app's Redis ACL user
   */
  record Launch(
      String app,
      Path dir,
      ObjectNode description,
      SandboxPlan plan,
      AppUsers.Credentials credentials) {}

  private final ClusterConfig config;
  private final Path logsDir;
  private final SandboxUsers users;

  /**
   * @param logsDir where the process backend writes each sandbox's output ({@code <app>.log})
   */
  SandboxSpecs(ClusterConfig config, Path logsDir) {
    this(
        config,
        logsDir,
        new SandboxUsers(config.stateDir().resolve(UIDS_FILE), SandboxUsers.MACHINE_REGISTRY));
  }

  /**
   * @param users the per-application uids of this host
   */
  SandboxSpecs(ClusterConfig config, Path logsDir, SandboxUsers users) {
    this.config = config;
    this.logsDir = logsDir;
    this.users = users;
  }

  /**
   * The sandbox of {@code launch}.
   *
   * @throws dev.sand.sandbox.SandboxException when the app's uid cannot be allocated
   */
  SandboxSpec of(Launch launch) {
    SandboxConfig sandbox = config.sandbox();
    DeployOptions options = launch.plan().options();
    JsonNode limits = launch.description().path("limits");
    Map<String, String> env = new LinkedHashMap<>();
    env.put(contractsConstants.ENV_APP, launch.app());
    env.put(contractsConstants.ENV_HOST_ID, config.hostId());
    env.put(contractsConstants.ENV_REDIS_USER, launch.credentials().user());
    env.put(contractsConstants.ENV_REDIS_PASSWORD, launch.credentials().password());
    env.put(
        contractsConstants.ENV_MAX_CONCURRENCY,
        String.valueOf(limits.path("max_concurrency").asInt(DEFAULT_MAX_CONCURRENCY)));
    // everything but /tmp is read-only: no .pyc files, and whatever looks for a home or a
    // temporary directory finds the writable one
    env.put("PYTHONDONTWRITEBYTECODE", "1");
    env.put("HOME", SANDBOX_TMP);
    env.put("TMPDIR", SANDBOX_TMP);
    env.put("PYTHONUNBUFFERED", "1");
    env.put(contractsConstants.ENV_BACKUP, options.backups() ? "1" : "0");
    // a grain placed on other hosts only is remote here: its events go through its topic
    List<String> local = launch.plan().placement().grainsOn(config.hostId());
    Set<String> remote = new TreeSet<>(options.remoteGrains());
    remote.addAll(launch.plan().placement().grainsElsewhere(config.hostId()));
    env.put(contractsConstants.ENV_REMOTE_GRAINS, String.join(",", remote));
    env.put(contractsConstants.ENV_LOCAL_GRAINS, String.join(",", local));
    taskTokenKey(launch.app())
        .ifPresent(key -> env.put(contractsConstants.ENV_TASK_TOKEN_KEY, key));
    List<SandboxSpec.Mount> mounts = new ArrayList<>();
    List<String> command;
    if (launch.plan().backend() == SandboxConfig.Backend.DOCKER) {
      command = inDocker(launch.dir(), env, mounts);
    } else {
      command = inProcess(launch.dir(), env, mounts);
    }
    // the app's memory_mb bounds one grain instance; the sandbox holds a worker per grain plus
    // instances in flight, so it gets one share per grain and one for bursts
    AppLimits app = AppLimits.of(limits, sandbox.limits());
    return new SandboxSpec(
        launch.app(),
        sandbox.baseImage(),
        app.sandboxMemoryMb(local.size(), sandbox.limits().maxSandboxMemoryMb()),
        sandbox.cpus(),
        app.cpuWeight(),
        sandbox.pidsLimit(),
        logsDir.resolve(launch.app() + ".log"),
        users.of(launch.app()),
        sandbox.tmpSizeMb(),
        mounts,
        env,
        command);
  }

  /**
   * The hex key the app's workers sign task tokens with (decision 0033): derived from {@code
   * host_agent.secret} per app, so a sandbox can mint its own app's tokens only and never sees the
   * secret. Empty without a secret: the agent then answers nobody, callbacks included, so there is
   * no key to give.
   */
  private Optional<String> taskTokenKey(String app) {
    String secret = config.hostAgent().secret();
    if (secret.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(HexFormat.of().formatHex(TaskTokens.appKey(secret, app)));
  }

  /** Mounts the app, Redis's socket directory and SAND's sources; returns the command. */
  private List<String> inDocker(Path dir, Map<String, String> env, List<SandboxSpec.Mount> mounts) {
    SandboxConfig sandbox = config.sandbox();
    Path socket = config.redis().socket();
    mounts.add(new SandboxSpec.Mount(dir.toString(), SANDBOX_APP, true));
    // read-only: a client needs no write access to the directory to connect to the socket
    mounts.add(new SandboxSpec.Mount(socket.getParent().toString(), SANDBOX_RUN, true));
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
    path.add(SANDBOX_APP + "/" + AppFiles.SITE_DIR);
    env.put(contractsConstants.ENV_APP_DIR, SANDBOX_APP);
    env.put(contractsConstants.ENV_REDIS_SOCKET, SANDBOX_RUN + "/" + socket.getFileName());
    env.put("PYTHONPATH", String.join(":", path));
    return List.of("python3", "-m", "sand_worker");
  }

  /**
   * The process backend sees the host paths, but only these (its jail binds them read-only at the
   * same place): the app, Redis's socket directory and SAND's sources; returns the command.
   */
  private List<String> inProcess(
      Path dir, Map<String, String> env, List<SandboxSpec.Mount> mounts) {
    SandboxConfig sandbox = config.sandbox();
    Path socketDir = config.redis().socket().getParent();
    mounts.add(new SandboxSpec.Mount(dir.toString(), dir.toString(), true));
    mounts.add(new SandboxSpec.Mount(socketDir.toString(), socketDir.toString(), true));
    for (Path source : sandbox.sourceDirs()) {
      mounts.add(new SandboxSpec.Mount(source.toString(), source.toString(), true));
    }
    env.put(contractsConstants.ENV_APP_DIR, dir.toString());
    env.put(contractsConstants.ENV_REDIS_SOCKET, config.redis().socket().toString());
    env.put("PYTHONPATH", pythonPath(sandbox.sourceDirs()) + ":" + dir.resolve(AppFiles.SITE_DIR));
    return List.of(sandbox.python().toString(), "-m", "sand_worker");
  }

  /** {@code dirs} as a PYTHONPATH. */
  static String pythonPath(List<Path> dirs) {
    return String.join(":", dirs.stream().map(Path::toString).toList());
  }
}
