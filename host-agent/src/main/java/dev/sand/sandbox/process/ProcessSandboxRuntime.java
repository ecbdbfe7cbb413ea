package dev.sand.sandbox.process;

import dev.sand.sandbox.SandboxException;
import dev.sand.sandbox.SandboxId;
import dev.sand.sandbox.SandboxInfo;
import dev.sand.sandbox.SandboxRuntime;
import dev.sand.sandbox.SandboxSpec;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Sandboxes as plain host processes, for machines without a Docker engine: the sandbox's main
 * process runs in a session (and process group) of its own under {@code setsid}, so stopping the
 * sandbox signals every grain worker and instance in it at once. No file-system, memory or network
 * isolation: mounts are ignored (the host paths are used as they are) and limits are not enforced.
 *
 * <p>Sandboxes live as long as this runtime's JVM; {@link #listOwned} knows only its own. Thread-
 * safe.
 */
public final class ProcessSandboxRuntime implements SandboxRuntime {
  private static final AtomicLong NEXT = new AtomicLong();

  private record Sandbox(SandboxSpec spec, Process[] process) {}

  private final Map<SandboxId, Sandbox> sandboxes = new ConcurrentHashMap<>();

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
      argv.addAll(sandbox.spec().command());
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
    return "process backend (no isolation between sandboxes)";
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
