package dev.sand.sandbox.process;

import dev.sand.contracts.contractsConstants;
import dev.sand.sandbox.SandboxException;
import dev.sand.sandbox.SandboxExits;
import dev.sand.sandbox.SandboxId;
import dev.sand.sandbox.SandboxInfo;
import dev.sand.sandbox.SandboxRuntime;
import dev.sand.sandbox.SandboxSpec;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sandboxes as host processes, for machines without a Docker engine (decision 0016).
 *
 * <p>The sandbox's main process runs in a session (and process group) of its own under {@code
 * setsid}, inside new mount, network, pid, IPC and UTS namespaces ({@code unshare}); there the jail
 * ({@code sand_worker/jail.py}, run by the host's Python in isolated mode) builds a root file
 * system of the system's read-only directories, the spec's mounts and a small {@code /tmp}, sets
 * the limits (processes per app uid, address space per process), and drops to the spec's
 * unprivileged user with no capabilities and {@code no_new_privs}. So grains see no network, no
 * state dir and no other app, and cannot signal processes outside their sandbox. Stopping the
 * sandbox signals its process group; when the worker (pid 1 of the namespace) exits, the kernel
 * kills what is left.
 *
 * <p>The command line is {@link JailCommand}'s; stopping is {@link ProcessGroups}'. Each sandbox
 * gets a cgroup ({@link Cgroups}: CPU weight, CPU quota, memory limit without swap) that the jail
 * enters before anything else runs (decision 0022), and the read end of a pipe only this JVM writes
 * to, as its standard input ({@code SAND_AGENT_FD=0}): when the agent exits, however it dies, the
 * pipe reaches end of file and the sandbox stops itself (decision 0021). {@link #reclaim} kills
 * what a previous agent of the same state dir left in its cgroups.
 *
 * <p>That needs root and cgroups. An agent that is not root, or on a machine without usable cpu and
 * memory cgroups, refuses to start process sandboxes (naming the fix) rather than run tenant code
 * with its own rights or without limits. Sandboxes live as long as this runtime's JVM; {@link
 * #listOwned} knows only its own. Thread-safe.
 */
public final class ProcessSandboxRuntime implements SandboxRuntime {
  private static final AtomicLong NEXT = new AtomicLong();

  private static final Logger LOG = LoggerFactory.getLogger(ProcessSandboxRuntime.class);

  /** A sandbox; {@code process} and {@code box} are set while it runs (guarded by itself). */
  private static final class Sandbox {
    private final SandboxSpec spec;
    private Process process;
    private Cgroups.Box box;

    private Sandbox(SandboxSpec spec) {
      this.spec = spec;
    }
  }

  private final Map<SandboxId, Sandbox> sandboxes = new ConcurrentHashMap<>();
  private final JailCommand jail;
  private final boolean root;
  private final Optional<Cgroups> cgroups;
  private final String noCgroups;
  private final SandboxExits exits;

  /**
   * @param cgroups this host's sandbox cgroups, empty when the machine has none ({@code noCgroups}
   *     says why)
   * @param exits signalled whenever a sandbox's process exits
   */
  // package-private for tests: root and cgroups are facts of the machine otherwise
  ProcessSandboxRuntime(
      Path python,
      Optional<Path> jail,
      boolean root,
      Optional<Cgroups> cgroups,
      String noCgroups,
      SandboxExits exits) {
    this.jail = new JailCommand(python, jail);
    this.root = root;
    this.cgroups = cgroups;
    this.noCgroups = noCgroups;
    this.exits = exits;
  }

  /**
   * A runtime whose jail is run by {@code python} (the host's, as root) from the first of {@code
   * sourceDirs} that holds {@code sand_worker/jail.py}, with the cgroups of the host whose state
   * dir is {@code stateDir}, that signals {@code exits} when a sandbox's process exits. Does not
   * fail when there is no jail, when the agent is not root or when the machine has no usable
   * cgroups: {@link #start} does, naming the fix. No I/O beyond reading {@code
   * /proc/self/mountinfo}.
   */
  public static ProcessSandboxRuntime create(
      Path python, List<Path> sourceDirs, Path stateDir, SandboxExits exits) {
    Optional<Path> jail = JailCommand.find(sourceDirs);
    StringBuilder why = new StringBuilder();
    Optional<Cgroups> cgroups = Cgroups.detect(stateDir, why);
    return new ProcessSandboxRuntime(
        python, jail, effectiveUid() == 0, cgroups, why.toString(), exits);
  }

  /**
   * Kills every process a previous agent of this state dir left in its sandbox cgroups (after a
   * {@code kill -9}, a crash) and removes those cgroups. Call before serving. Returns the number of
   * processes killed; 0 when there are no cgroups here or the agent is not root.
   *
   * @throws SandboxException when a leftover cannot be killed or its cgroup removed
   */
  public int reclaim() {
    if (!root || cgroups.isEmpty()) {
      return 0;
    }
    return cgroups.get().reclaim();
  }

  @Override
  public SandboxId create(SandboxSpec spec) {
    SandboxId id = new SandboxId("proc-" + spec.app() + "-" + NEXT.incrementAndGet());
    sandboxes.put(id, new Sandbox(spec));
    return id;
  }

  @Override
  public void start(SandboxId id) {
    Sandbox sandbox = require(id);
    synchronized (sandbox) {
      if (sandbox.process != null && sandbox.process.isAlive()) {
        return;
      }
      SandboxSpec spec = sandbox.spec;
      requireIsolation(spec);
      long started = System.nanoTime();
      sandbox.box =
          cgroups
              .get()
              .create(
                  id.value(), new Cgroups.Limits(spec.cpuWeight(), spec.cpus(), spec.memoryMb()));
      LOG.atInfo()
          .addKeyValue("app", spec.app())
          .addKeyValue("sandbox", id.value())
          .addKeyValue("cgroup", sandbox.box.dirs().toString())
          .addKeyValue(
              "took_ms", String.format(Locale.ROOT, "%.2f", (System.nanoTime() - started) / 1e6))
          .log("sandbox cgroup ready");
      List<String> argv = new ArrayList<>();
      argv.add("setsid");
      argv.addAll(jail.argv(spec, sandbox.box));
      ProcessBuilder builder = new ProcessBuilder(argv);
      builder.environment().putAll(spec.env());
      // stdin stays a pipe from this JVM (ProcessBuilder's default), never written to: its end
      // of file tells the sandbox that the agent is gone (decision 0021)
      builder.environment().put(contractsConstants.ENV_AGENT_FD, "0");
      builder.redirectErrorStream(true);
      try {
        if (spec.logFile() != null) {
          Files.createDirectories(spec.logFile().getParent());
          builder.redirectOutput(ProcessBuilder.Redirect.appendTo(spec.logFile().toFile()));
        } else {
          builder.redirectOutput(ProcessBuilder.Redirect.DISCARD);
        }
        sandbox.process = builder.start();
        // the JDK's process reaper completes this when the sandbox's process exits: no polling
        sandbox.process.onExit().thenRun(exits::signal);
      } catch (IOException e) {
        throw new SandboxException(
            "process sandbox of app '" + spec.app() + "': cannot start: " + e, e);
      }
    }
  }

  /** Refuses to run {@code spec} without its user's isolation or its limits, naming the fix. */
  private void requireIsolation(SandboxSpec spec) {
    if (!root) {
      throw new SandboxException(
          "process sandbox of app '"
              + spec.app()
              + "': refusing to run grains without isolation: the process backend needs the host"
              + " agent to run as root (to give each app its own uid and namespaces); run the"
              + " agent as root, or deploy with --backend docker",
          null);
    }
    if (cgroups.isEmpty()) {
      throw new SandboxException(
          "process sandbox of app '"
              + spec.app()
              + "': refusing to run grains without CPU and memory limits: "
              + noCgroups
              + "; mount cgroup v2 with the cpu and memory controllers enabled (or cgroup v1"
              + " cpu and memory hierarchies), or deploy with --backend docker",
          null);
    }
  }

  private static int effectiveUid() {
    try {
      return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    } catch (IOException | UnsupportedOperationException e) {
      return -1; // unknown: treated as not root, so nothing runs unisolated
    }
  }

  @Override
  public void stop(SandboxId id, Duration grace) {
    Sandbox sandbox = sandboxes.get(id);
    if (sandbox == null) {
      return;
    }
    // held throughout: a restart of the same sandbox waits until its cgroup is gone
    synchronized (sandbox) {
      if (sandbox.process != null && sandbox.process.isAlive()) {
        ProcessGroups.stop(sandbox.process, grace);
      }
      // whatever is left in its cgroup goes with it (the kernel kills the rest of a pid
      // namespace when its first process dies, but may still be releasing them)
      if (sandbox.box != null) {
        cgroups.get().remove(sandbox.box);
        sandbox.box = null;
      }
    }
  }

  @Override
  public void remove(SandboxId id) {
    stop(id, Duration.ofSeconds(5));
    sandboxes.remove(id);
  }

  @Override
  public List<SandboxInfo> listOwned() {
    List<SandboxInfo> owned = new ArrayList<>();
    sandboxes.forEach(
        (id, sandbox) -> {
          Process process = sandbox.process;
          String state =
              process == null
                  ? "created"
                  : process.isAlive() ? "running" : "exited (" + process.exitValue() + ")";
          owned.add(new SandboxInfo(id, sandbox.spec.app(), state));
        });
    return owned;
  }

  @Override
  public String logs(SandboxId id, int tailLines) {
    SandboxSpec spec = require(id).spec;
    if (spec.logFile() == null || !Files.exists(spec.logFile())) {
      return "";
    }
    return tail(spec.logFile().toFile(), tailLines);
  }

  @Override
  public String ping() {
    if (!root) {
      return "process backend (refuses to start: the agent is not root)";
    }
    return cgroups
        .map(
            c ->
                "process backend (namespaces, one uid per app, cgroup "
                    + c.version().name().toLowerCase(Locale.ROOT)
                    + " cpu and memory limits)")
        .orElse("process backend (refuses to start: " + noCgroups + ")");
  }

  @Override
  public void close() {}

  private Sandbox require(SandboxId id) {
    Sandbox sandbox = sandboxes.get(id);
    if (sandbox == null) {
      throw new SandboxException("process sandbox " + id + " does not exist", null);
    }
    return sandbox;
  }

  /** The last {@code lines} lines of {@code file}, reading at most its last 1 MiB. */
  static String tail(java.io.File file, int lines) {
    try (RandomAccessFile raf = new RandomAccessFile(file, "r")) {
      long length = raf.length();
      int size = (int) Math.min(length, 1 << 20);
      byte[] buffer = new byte[size];
      raf.seek(length - size);
      raf.readFully(buffer);
      String text = new String(buffer, StandardCharsets.UTF_8);
      String[] all = text.split("\n", -1);
      int from = Math.max(0, all.length - lines - 1);
      return String.join("\n", java.util.Arrays.asList(all).subList(from, all.length));
    } catch (IOException e) {
      throw new SandboxException("cannot read " + file + ": " + e, e);
    }
  }
}
