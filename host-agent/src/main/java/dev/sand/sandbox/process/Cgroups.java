package dev.sand.sandbox.process;

import dev.sand.contracts.Names;
import dev.sand.sandbox.SandboxException;
import dev.sand.sandbox.SandboxSpec;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The cgroups of one host's process sandboxes (decision 0022): a CPU weight, a CPU quota and a
 * memory limit (no swap) per sandbox, as Docker gives each container.
 *
 * <p>Every sandbox of the host gets a cgroup {@code <name>} under {@code sand-<hash of the host's
 * state dir>} ({@link Names#sandboxCgroup}) at the root of each hierarchy: on cgroup v2 the unified
 * one ({@code cpu.weight}, {@code cpu.max}, {@code memory.max}, {@code memory.swap.max = 0}), on
 * cgroup v1 the {@code cpu} and {@code memory} ones ({@code cpu.shares}, {@code cpu.cfs_quota_us},
 * {@code memory.limit_in_bytes}, {@code memory.memsw.limit_in_bytes}). At the root, like Docker's
 * own {@code /docker}: the path does not depend on who started the agent, so {@code sand down} and
 * the next agent find what a killed one left there. The sandbox's jail moves itself in before it
 * runs anything else, so every process of the sandbox, tenant code included, is inside; a tenant
 * (unprivileged, the files are root's) cannot move out.
 *
 * <p>Blocking file I/O on cgroupfs (well under a millisecond per sandbox); thread-safe (no state
 * beyond the paths).
 */
public final class Cgroups {
  /** The cgroup interface this machine offers for CPU and memory. */
  public enum Version {
    V1,
    V2
  }

  /**
   * What one sandbox gets.
   *
   * @param cpuWeight its share of contended CPU, cgroup v2 scale (1 to 10000, 100 the default)
   * @param cpus most CPUs it may use, > 0
   * @param memoryMb most memory of all its processes together, MiB, > 0 (no swap)
   */
  public record Limits(int cpuWeight, double cpus, int memoryMb) {
    public Limits {
      if (cpuWeight < SandboxSpec.MIN_CPU_WEIGHT || cpuWeight > SandboxSpec.MAX_CPU_WEIGHT) {
        throw new IllegalArgumentException("cpu_weight out of range, got " + cpuWeight);
      }
      if (!(cpus > 0) || memoryMb <= 0) {
        throw new IllegalArgumentException(
            "cpus and memory_mb must be > 0, got " + cpus + " and " + memoryMb);
      }
    }
  }

  /**
   * The cgroup of one sandbox.
   *
   * @param dirs its directory in each hierarchy (one on v2; cpu then memory on v1)
   * @param memory the one holding its memory limit and OOM-kill count
   * @param version the interface, which says where the sandbox sees {@code memory}
   */
  public record Box(List<Path> dirs, Path memory, Version version) {
    public Box {
      dirs = List.copyOf(dirs);
    }
  }

  private static final long PERIOD_US = 100_000;
  private static final long KILL_WAIT_MS = 5_000;
  private static final long POLL_MS = 20;

  private final Version version;
  private final Path cpuParent;
  private final Path memoryParent;

  private Cgroups(Version version, Path cpuRoot, Path memoryRoot, String parent) {
    this.version = version;
    this.cpuParent = cpuRoot.resolve(parent);
    this.memoryParent = memoryRoot.resolve(parent);
  }

  /**
   * The cgroups of the host whose state dir is {@code stateDir}, on this machine's cgroup mounts
   * ({@code /proc/self/mountinfo}); empty, with {@code why} told the reason, when this machine
   * offers neither a cgroup v2 mount with the cpu and memory controllers nor cgroup v1 hierarchies
   * of both. Creates nothing.
   */
  public static Optional<Cgroups> detect(Path stateDir, StringBuilder why) {
    String mountinfo;
    try {
      mountinfo = Files.readString(Path.of("/proc/self/mountinfo"));
    } catch (IOException e) {
      why.append("cannot read /proc/self/mountinfo: ").append(e.getMessage());
      return Optional.empty();
    }
    return of(mountinfo, Names.sandboxCgroup(stateDir.toAbsolutePath().toString()), why);
  }

  /**
   * The cgroups described by {@code mountinfo} (the format of {@code /proc/self/mountinfo}), with
   * {@code parent} as the host's cgroup name; v2 when its mount lists cpu and memory in {@code
   * cgroup.controllers}, else v1.
   */
  static Optional<Cgroups> of(String mountinfo, String parent, StringBuilder why) {
    Path cpu = null;
    Path memory = null;
    List<Path> unified = new ArrayList<>();
    for (String line : mountinfo.split("\n")) {
      int dash = line.indexOf(" - ");
      if (dash < 0) {
        continue;
      }
      String[] mount = line.substring(0, dash).split(" ");
      String[] fs = line.substring(dash + 3).split(" ");
      if (mount.length < 5 || fs.length < 3) {
        continue;
      }
      Path point = Path.of(mount[4]);
      if ("cgroup2".equals(fs[0])) {
        unified.add(point);
      } else if ("cgroup".equals(fs[0])) {
        Set<String> options = Set.of(fs[2].split(","));
        cpu = options.contains("cpu") ? point : cpu;
        memory = options.contains("memory") ? point : memory;
      }
    }
    for (Path root : unified) {
      Set<String> controllers = controllers(root);
      if (controllers.contains("cpu") && controllers.contains("memory")) {
        return Optional.of(new Cgroups(Version.V2, root, root, parent));
      }
    }
    if (cpu != null && memory != null) {
      return Optional.of(new Cgroups(Version.V1, cpu, memory, parent));
    }
    why.append(
        "this machine has no cgroup v2 mount offering the cpu and memory controllers"
            + " (cgroup2 mounts: "
            + unified
            + ") and no cgroup v1 hierarchies of both (cpu: "
            + cpu
            + ", memory: "
            + memory
            + ")");
    return Optional.empty();
  }

  private static Set<String> controllers(Path root) {
    try {
      return Set.of(Files.readString(root.resolve("cgroup.controllers")).trim().split("\\s+"));
    } catch (IOException e) {
      return Set.of();
    }
  }

  /** The interface in use. */
  public Version version() {
    return version;
  }

  /** The host's parent cgroups (one on v2; cpu and memory on v1). */
  public List<Path> parents() {
    return List.copyOf(new LinkedHashSet<>(List.of(cpuParent, memoryParent)));
  }

  /**
   * Creates the cgroup {@code name} (or resets the limits of an existing one) with {@code limits}.
   *
   * @throws SandboxException naming the file when the kernel refuses (no permission, read-only
   *     cgroupfs, a controller that cannot be enabled)
   */
  public Box create(String name, Limits limits) {
    try {
      if (version == Version.V2) {
        Path dir = cpuParent.resolve(name);
        Files.createDirectories(dir);
        enableControllers(cpuParent.getParent());
        enableControllers(cpuParent);
        write(dir.resolve("cpu.weight"), String.valueOf(limits.cpuWeight()));
        write(dir.resolve("cpu.max"), quotaUs(limits.cpus()) + " " + PERIOD_US);
        write(dir.resolve("memory.max"), String.valueOf(bytes(limits.memoryMb())));
        writeIfPresent(dir.resolve("memory.swap.max"), "0");
        return new Box(List.of(dir), dir, version);
      }
      Path cpu = cpuParent.resolve(name);
      Path memory = memoryParent.resolve(name);
      Files.createDirectories(cpu);
      Files.createDirectories(memory);
      write(cpu.resolve("cpu.shares"), String.valueOf(SandboxSpec.shares(limits.cpuWeight())));
      write(cpu.resolve("cpu.cfs_period_us"), String.valueOf(PERIOD_US));
      write(cpu.resolve("cpu.cfs_quota_us"), String.valueOf(quotaUs(limits.cpus())));
      // memory+swap may never be below memory: on a fresh cgroup both are unlimited, so the
      // memory limit goes first; a reset to a higher limit raises memory+swap first
      String limit = String.valueOf(bytes(limits.memoryMb()));
      Path memsw = memory.resolve("memory.memsw.limit_in_bytes");
      writeIfPresent(memsw, "-1");
      write(memory.resolve("memory.limit_in_bytes"), limit);
      writeIfPresent(memsw, limit);
      return new Box(List.of(cpu, memory), memory, version);
    } catch (IOException e) {
      throw new SandboxException("cgroup " + name + " of " + cpuParent + ": " + e, e);
    }
  }

  /**
   * Kills whatever still runs in {@code box} and removes it. Blocks until it is empty (up to 5 s).
   *
   * @throws SandboxException when it cannot be emptied or removed
   */
  public void remove(Box box) {
    for (Path dir : box.dirs()) {
      killAll(dir);
    }
    for (Path dir : box.dirs()) {
      removeDir(dir);
    }
  }

  /**
   * Kills every process in every sandbox cgroup of this host and removes those cgroups: what a
   * previous agent of the same state dir left (after a crash or {@code kill -9}). Returns the
   * number of processes killed.
   */
  public int reclaim() {
    int killed = 0;
    for (Path parent : parents()) {
      for (Path dir : children(parent)) {
        killed += killAll(dir);
      }
    }
    for (Path parent : parents()) {
      for (Path dir : children(parent)) {
        removeDir(dir);
      }
    }
    return killed;
  }

  /** The pids in the cgroup {@code dir} (as this process's pid namespace sees them). */
  static List<Long> pids(Path dir) {
    try {
      List<Long> pids = new ArrayList<>();
      for (String line : Files.readAllLines(dir.resolve("cgroup.procs"))) {
        if (!line.isBlank()) {
          pids.add(Long.parseLong(line.trim()));
        }
      }
      return pids;
    } catch (NoSuchFileException e) {
      return List.of();
    } catch (IOException e) {
      throw new SandboxException("cannot read " + dir.resolve("cgroup.procs") + ": " + e, e);
    }
  }

  private static long quotaUs(double cpus) {
    return Math.max(1_000, Math.round(cpus * PERIOD_US));
  }

  private static long bytes(int memoryMb) {
    return memoryMb * 1024L * 1024L;
  }

  private static int killAll(Path dir) {
    int killed = 0;
    long giveUp = System.currentTimeMillis() + KILL_WAIT_MS;
    List<Long> left = pids(dir);
    while (!left.isEmpty()) {
      for (long pid : left) {
        killed += ProcessHandle.of(pid).map(p -> p.destroyForcibly() ? 1 : 0).orElse(0);
      }
      if (System.currentTimeMillis() > giveUp) {
        throw new SandboxException(
            "cgroup " + dir + " still holds " + left + " after " + KILL_WAIT_MS + " ms", null);
      }
      sleep();
      left = pids(dir);
    }
    return killed;
  }

  private static void removeDir(Path dir) {
    long giveUp = System.currentTimeMillis() + KILL_WAIT_MS;
    while (true) {
      try {
        Files.deleteIfExists(dir);
        return;
      } catch (IOException e) {
        // EBUSY while the kernel still releases the last exited processes
        if (System.currentTimeMillis() > giveUp) {
          throw new SandboxException("cannot remove cgroup " + dir + ": " + e, e);
        }
        sleep();
      }
    }
  }

  private static List<Path> children(Path parent) {
    List<Path> dirs = new ArrayList<>();
    if (!Files.isDirectory(parent)) {
      return dirs;
    }
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(parent, Files::isDirectory)) {
      entries.forEach(dirs::add);
    } catch (IOException e) {
      throw new SandboxException("cannot list cgroup " + parent + ": " + e, e);
    }
    return dirs;
  }

  /** Delegates cpu and memory to the children of {@code dir} (cgroup v2), unless already done. */
  private static void enableControllers(Path dir) throws IOException {
    Path control = dir.resolve("cgroup.subtree_control");
    String enabled = Files.readString(control);
    Set<String> have = Set.of(enabled.trim().split("\\s+"));
    if (!have.contains("cpu") || !have.contains("memory")) {
      write(control, "+cpu +memory");
    }
  }

  private static void write(Path file, String value) throws IOException {
    Files.writeString(file, value, StandardCharsets.US_ASCII);
  }

  private static void writeIfPresent(Path file, String value) throws IOException {
    if (Files.exists(file)) {
      write(file, value);
    }
  }

  private static void sleep() {
    try {
      Thread.sleep(POLL_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SandboxException("interrupted while emptying a cgroup", e);
    }
  }
}
