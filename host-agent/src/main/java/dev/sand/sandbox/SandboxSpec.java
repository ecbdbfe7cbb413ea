package dev.sand.sandbox;

import dev.sand.contracts.Names;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * What a sandbox is made of.
 *
 * @param app the application the sandbox isolates
 * @param image the image (Docker) holding the runtime and SAND's worker code
 * @param memoryMb memory limit in MiB, > 0
 * @param mounts host directories visible inside the sandbox
 * @param env environment of the sandbox's main process
 * @param command the sandbox's main process; it must stay alive while the sandbox is in use
 * @param cpus CPU limit, > 0 (Docker only)
 * @param pidsLimit most processes in the sandbox, > 0 (Docker only)
 * @param logFile where the process backend writes the sandbox's output (Docker keeps its own)
 * @param user the unprivileged user every process of the sandbox runs as (one per application)
 * @param tmpSizeMb size of the sandbox's writable {@code /tmp} in MiB, > 0; the rest of its file
 *     system is read-only
 */
public record SandboxSpec(
    String app,
    String image,
    int memoryMb,
    double cpus,
    int pidsLimit,
    Path logFile,
    User user,
    int tmpSizeMb,
    List<Mount> mounts,
    Map<String, String> env,
    List<String> command) {
  public SandboxSpec {
    Names.requireApp(app);
    if (image == null || image.isBlank()) {
      throw new IllegalArgumentException("sandbox of app '" + app + "': image must be non-blank");
    }
    if (memoryMb <= 0) {
      throw new IllegalArgumentException(
          "sandbox of app '" + app + "': memory_mb must be > 0, got " + memoryMb);
    }
    if (!(cpus > 0) || pidsLimit <= 0) {
      throw new IllegalArgumentException(
          "sandbox of app '"
              + app
              + "': cpus and pids_limit must be > 0, got "
              + cpus
              + " and "
              + pidsLimit);
    }
    if (user == null) {
      throw new IllegalArgumentException("sandbox of app '" + app + "': user is required");
    }
    if (tmpSizeMb <= 0) {
      throw new IllegalArgumentException(
          "sandbox of app '" + app + "': tmp_size_mb must be > 0, got " + tmpSizeMb);
    }
    mounts = List.copyOf(mounts);
    env = Map.copyOf(env);
    command = List.copyOf(command);
    if (command.isEmpty()) {
      throw new IllegalArgumentException("sandbox of app '" + app + "': command must be non-empty");
    }
  }

  /**
   * A host directory bound into the sandbox.
   *
   * @param hostPath absolute path on the host
   * @param sandboxPath absolute path inside the sandbox
   * @param readOnly whether the sandbox may write to it
   */
  public record Mount(String hostPath, String sandboxPath, boolean readOnly) {
    public Mount {
      if (hostPath == null || !hostPath.startsWith("/")) {
        throw new IllegalArgumentException("mount host path must be absolute, got " + hostPath);
      }
      if (sandboxPath == null || !sandboxPath.startsWith("/")) {
        throw new IllegalArgumentException(
            "mount sandbox path must be absolute, got " + sandboxPath);
      }
    }
  }

  /**
   * The numeric user and group a sandbox's processes run as. No passwd entry is needed: nothing in
   * the sandbox looks the user up by name.
   *
   * @param uid > 0 (never root)
   * @param gid > 0 (never root's group)
   */
  public record User(int uid, int gid) {
    public User {
      if (uid <= 0 || gid <= 0) {
        throw new IllegalArgumentException(
            "sandbox user must not be root: uid and gid must be > 0, got " + uid + ":" + gid);
      }
    }

    /** The {@code uid:gid} form Docker and setpriv take. */
    @Override
    public String toString() {
      return uid + ":" + gid;
    }
  }
}
