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
 * @param memoryMb memory limit of the whole sandbox in MiB, > 0 (no swap)
 * @param mounts host directories visible inside the sandbox
 * @param env environment of the sandbox's main process
 * @param command the sandbox's main process; it must stay alive while the sandbox is in use
 * @param cpus most CPUs the sandbox may use, > 0
 * @param cpuWeight its share of contended CPU against other sandboxes, cgroup v2 scale: 1 to 10000,
 *     100 the default (decision 0022)
 * @param pidsLimit most processes in the sandbox, > 0 (process backend: per application uid)
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
    int cpuWeight,
    int pidsLimit,
    Path logFile,
    User user,
    int tmpSizeMb,
    List<Mount> mounts,
    Map<String, String> env,
    List<String> command) {
  /** The range of {@code cpuWeight} (cgroup v2's {@code cpu.weight}). */
  public static final int MIN_CPU_WEIGHT = 1;

  public static final int MAX_CPU_WEIGHT = 10_000;

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
    if (cpuWeight < MIN_CPU_WEIGHT || cpuWeight > MAX_CPU_WEIGHT) {
      throw new IllegalArgumentException(
          "sandbox of app '"
              + app
              + "': cpu_weight must be from "
              + MIN_CPU_WEIGHT
              + " to "
              + MAX_CPU_WEIGHT
              + ", got "
              + cpuWeight);
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

  /** This sandbox's CPU weight as {@code cpu.shares} (cgroup v1, Docker's {@code CpuShares}). */
  public long cpuShares() {
    return shares(cpuWeight);
  }

  /**
   * The {@code cpu.shares} of a cgroup v2 {@code weight}: the default weight 100 is the default
   * 1024 shares, and the ratios between sandboxes stay the same (at least 2, the kernel's floor).
   */
  public static long shares(int weight) {
    return Math.max(2, Math.round(weight * 1024.0 / 100));
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
