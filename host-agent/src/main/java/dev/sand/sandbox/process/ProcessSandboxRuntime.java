package dev.sand.sandbox.process;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.sandbox.SandboxException;
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
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

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
 * <p>That needs root. An agent that is not root refuses to start process sandboxes (naming the fix)
 * rather than run tenant code with its own rights. Sandboxes live as long as this runtime's JVM;
 * {@link #listOwned} knows only its own. Thread-safe.
 */
public final class ProcessSandboxRuntime implements SandboxRuntime {
  private static final AtomicLong NEXT = new AtomicLong();
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String JAIL_SCRIPT = "sand_worker/jail.py";

  private record Sandbox(SandboxSpec spec, Process[] process) {}

  private final Map<SandboxId, Sandbox> sandboxes = new ConcurrentHashMap<>();
  private final Path python;
  private final Optional<Path> jail;
  private final boolean root;

  // package-private for tests: whether the agent is root is a fact of the machine otherwise
  ProcessSandboxRuntime(Path python, Optional<Path> jail, boolean root) {
    this.python = python;
    this.jail = jail;
    this.root = root;
  }

  /**
   * A runtime whose jail is run by {@code python} (the host's, as root) from the first of {@code
   * sourceDirs} that holds {@code sand_worker/jail.py}. Does not fail when there is none, or when
   * the agent is not root: {@link #start} does, naming the fix.
   */
  public static ProcessSandboxRuntime create(Path python, List<Path> sourceDirs) {
    Optional<Path> jail =
        sourceDirs.stream()
            .map(dir -> dir.resolve(JAIL_SCRIPT))
            .filter(Files::isRegularFile)
            .findFirst();
    return new ProcessSandboxRuntime(python, jail, effectiveUid() == 0);
  }

  @Override
  public SandboxId create(SandboxSpec spec) {
    SandboxId id = new SandboxId("proc-" + spec.app() + "-" + NEXT.incrementAndGet());
    sandboxes.put(id, new Sandbox(spec, new Process[1]));
    return id;
  }

  @Override
  public void start(SandboxId id) {
    Sandbox sandbox = require(id);
    synchronized (sandbox) {
      if (sandbox.process()[0] != null && sandbox.process()[0].isAlive()) {
        return;
      }
      List<String> argv = new ArrayList<>();
      argv.add("setsid");
      argv.addAll(jailed(sandbox.spec()));
      ProcessBuilder builder = new ProcessBuilder(argv);
      builder.environment().putAll(sandbox.spec().env());
      builder.redirectErrorStream(true);
      try {
        if (sandbox.spec().logFile() != null) {
          Files.createDirectories(sandbox.spec().logFile().getParent());
          builder.redirectOutput(
              ProcessBuilder.Redirect.appendTo(sandbox.spec().logFile().toFile()));
        } else {
          builder.redirectOutput(ProcessBuilder.Redirect.DISCARD);
        }
        sandbox.process()[0] = builder.start();
      } catch (IOException e) {
        throw new SandboxException(
            "process sandbox of app '" + sandbox.spec().app() + "': cannot start: " + e, e);
      }
    }
  }

  /**
   * {@code spec}'s command inside its namespaces and jail. {@code unshare --fork} waits for the
   * namespace's first process and, with {@code --kill-child}, takes it down if unshare itself is
   * killed; it ignores SIGTERM while waiting, so a stop reaches the worker, which shuts down.
   */
  private List<String> jailed(SandboxSpec spec) {
    if (!root) {
      throw new SandboxException(
          "process sandbox of app '"
              + spec.app()
              + "': refusing to run grains without isolation: the process backend needs the host"
              + " agent to run as root (to give each app its own uid and namespaces); run the"
              + " agent as root, or deploy with --backend docker",
          null);
    }
    Path script =
        jail.orElseThrow(
            () ->
                new SandboxException(
                    "process sandbox of app '"
                        + spec.app()
                        + "': "
                        + JAIL_SCRIPT
                        + " is in none of the sandbox's source_dirs",
                    null));
    List<String> argv =
        new ArrayList<>(
            List.of(
                "unshare",
                "--mount",
                "--net",
                "--pid",
                // SysV IPC objects and the host name are the host's otherwise
                "--ipc",
                "--uts",
                "--fork",
                "--kill-child",
                "--propagation",
                "private",
                "--",
                python.toString(),
                "-I",
                "-S",
                script.toString(),
                jailSpec(spec),
                "--"));
    argv.addAll(spec.command());
    return argv;
  }

  /** The jail's argument: the user, the limits and the mounts of {@code spec}, as JSON. */
  static String jailSpec(SandboxSpec spec) {
    ObjectNode doc = JSON.createObjectNode();
    doc.put("uid", spec.user().uid());
    doc.put("gid", spec.user().gid());
    doc.put("tmp_size_mb", spec.tmpSizeMb());
    doc.put("memory_mb", spec.memoryMb());
    doc.put("pids_limit", spec.pidsLimit());
    ArrayNode mounts = doc.putArray("mounts");
    for (SandboxSpec.Mount mount : spec.mounts()) {
      mounts
          .addObject()
          .put("host", mount.hostPath())
          .put("sandbox", mount.sandboxPath())
          .put("read_only", mount.readOnly());
    }
    return doc.toString();
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
    Process process;
    synchronized (sandbox) {
      process = sandbox.process()[0];
    }
    if (process == null || !process.isAlive()) {
      return;
    }
    // setsid made the main process the leader of its own group: signal the whole group.
    signalGroup(process.pid(), "TERM");
    try {
      if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
        signalGroup(process.pid(), "KILL");
        process.waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    // instances that outlived the main process are in the same group
    signalGroup(process.pid(), "KILL");
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
          Process process = sandbox.process()[0];
          String state =
              process == null
                  ? "created"
                  : process.isAlive() ? "running" : "exited (" + process.exitValue() + ")";
          owned.add(new SandboxInfo(id, sandbox.spec().app(), state));
        });
    return owned;
  }

  @Override
  public String logs(SandboxId id, int tailLines) {
    Sandbox sandbox = require(id);
    if (sandbox.spec().logFile() == null || !Files.exists(sandbox.spec().logFile())) {
      return "";
    }
    return tail(sandbox.spec().logFile().toFile(), tailLines);
  }

  @Override
  public String ping() {
    return root
        ? "process backend (namespaces, one uid per app)"
        : "process backend (refuses to start: the agent is not root)";
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

  private static void signalGroup(long pgid, String signal) {
    try {
      Process kill =
          new ProcessBuilder("kill", "-" + signal, "--", "-" + pgid)
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .start();
      kill.waitFor(5, TimeUnit.SECONDS);
    } catch (IOException e) {
      throw new SandboxException("cannot signal process group " + pgid + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
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
