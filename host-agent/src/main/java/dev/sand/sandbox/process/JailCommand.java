package dev.sand.sandbox.process;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.sandbox.SandboxException;
import dev.sand.sandbox.SandboxSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The command line that runs a sandbox's command inside new namespaces ({@code unshare}) and the
 * jail ({@code sand_worker/jail.py}, run by the host's Python in isolated mode), with the jail's
 * JSON argument: the app's user, limits, mounts and cgroup. Immutable.
 */
final class JailCommand {
  static final String JAIL_SCRIPT = "sand_worker/jail.py";
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Path python;
  private final Optional<Path> script;

  /**
   * @param python the host's Python, which runs the jail as root
   * @param script the jail script; empty when no source dir holds it ({@link #argv} then throws)
   */
  JailCommand(Path python, Optional<Path> script) {
    this.python = python;
    this.script = script;
  }

  /** The jail script in the first of {@code sourceDirs} that holds it. Reads the file system. */
  static Optional<Path> find(List<Path> sourceDirs) {
    return sourceDirs.stream()
        .map(dir -> dir.resolve(JAIL_SCRIPT))
        .filter(Files::isRegularFile)
        .findFirst();
  }

  /**
   * {@code spec}'s command inside its namespaces and jail, entering {@code box}. {@code unshare
   * --fork} waits for the namespace's first process and, with {@code --kill-child}, takes it down
   * if unshare itself is killed; it ignores SIGTERM while waiting, so a stop reaches the worker,
   * which shuts down.
   *
   * @throws SandboxException when there is no jail script
   */
  List<String> argv(SandboxSpec spec, Cgroups.Box box) {
    Path script =
        this.script.orElseThrow(
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
                spec(spec, box),
                "--"));
    argv.addAll(spec.command());
    return argv;
  }

  /**
   * The jail's argument, as JSON: the user, the limits and the mounts of {@code spec}, and the
   * cgroup {@code box} it enters.
   */
  static String spec(SandboxSpec spec, Cgroups.Box box) {
    ObjectNode doc = JSON.createObjectNode();
    ArrayNode dirs = doc.putArray("cgroups");
    box.dirs().forEach(dir -> dirs.add(dir.toString()));
    doc.put("memory_cgroup", box.memory().toString());
    doc.put("cgroup_version", box.version() == Cgroups.Version.V2 ? 2 : 1);
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
}
