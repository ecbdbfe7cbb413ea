package dev.sand.config;

import dev.sand.contracts.contractsConstants;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * How this host runs application sandboxes ({@code sandbox} section of the config file).
 *
 * @param backend the default backend; a deploy may ask for the other one
 * @param baseImage the Docker image sandboxes start from (built locally by set-up)
 * @param python the host's Python interpreter: validates apps, installs requirements, and runs the
 *     grain workers of the process backend
 * @param sourceDirs host directories put on the grain workers' {@code PYTHONPATH}: SAND's own
 *     packages (mounted read-only into Docker sandboxes)
 * @param siteDir host directory of the third-party packages grain workers import inside Docker
 *     sandboxes (built by set-up for the sandbox's Python)
 * @param cpus most CPUs one sandbox may use, > 0 (Docker: NanoCpus; process backend: cgroup quota)
 * @param pidsLimit most processes one sandbox may hold, > 0 (process backend: per application uid)
 * @param tmpSizeMb size of a sandbox's writable {@code /tmp} in MiB, > 0
 * @param limits the CPU weight and memory an app gets when its {@code app.yaml} does not say, and
 *     the most it may ask for (decision 0022)
 */
public record SandboxConfig(
    Backend backend,
    String baseImage,
    Path python,
    List<Path> sourceDirs,
    Path siteDir,
    double cpus,
    int pidsLimit,
    int tmpSizeMb,
    Limits limits) {

  /** {@code tmp_size_mb} of config files that predate it. */
  public static final int DEFAULT_TMP_SIZE_MB = 64;

  /**
   * The operator's defaults and maxima for an app's {@code limits.cpu_weight} and {@code
   * limits.memory_mb}.
   *
   * @param cpuWeight an app's CPU weight when it does not set one (cgroup v2 scale, 1 to 10000)
   * @param maxCpuWeight the most an app may ask for, from {@code cpuWeight} to 10000
   * @param memoryMb memory of one grain instance when the app does not set it, MiB, > 0
   * @param maxMemoryMb the most an app may ask for per instance, at least {@code memoryMb}
   * @param maxSandboxMemoryMb the most one sandbox gets however many grains it runs, at least
   *     {@code maxMemoryMb}
   */
  public record Limits(
      int cpuWeight, int maxCpuWeight, int memoryMb, int maxMemoryMb, int maxSandboxMemoryMb) {
    /** Lowest and highest CPU weight (cgroup v2's {@code cpu.weight}; contracts.thrift). */
    public static final int MIN_WEIGHT = contractsConstants.CONFIG_MIN_CPU_WEIGHT;

    public static final int MAX_WEIGHT = contractsConstants.CONFIG_MAX_CPU_WEIGHT;

    /** The limits of config files that predate them (the committed defaults). */
    public static final Limits DEFAULT = new Limits(100, 100, 512, 4096, 8192);

    public Limits {
      if (cpuWeight < MIN_WEIGHT || cpuWeight > MAX_WEIGHT) {
        throw ConfigException.invalid(
            "cpu_weight",
            "must be from " + MIN_WEIGHT + " to " + MAX_WEIGHT + ", got " + cpuWeight);
      }
      if (maxCpuWeight < cpuWeight || maxCpuWeight > MAX_WEIGHT) {
        throw ConfigException.invalid(
            "max_cpu_weight",
            "must be from cpu_weight ("
                + cpuWeight
                + ") to "
                + MAX_WEIGHT
                + ", got "
                + maxCpuWeight);
      }
      if (memoryMb <= 0) {
        throw ConfigException.invalid("memory_mb", "must be > 0, got " + memoryMb);
      }
      if (maxMemoryMb < memoryMb) {
        throw ConfigException.invalid(
            "max_memory_mb", "must be at least memory_mb (" + memoryMb + "), got " + maxMemoryMb);
      }
      if (maxSandboxMemoryMb < maxMemoryMb) {
        throw ConfigException.invalid(
            "max_sandbox_memory_mb",
            "must be at least max_memory_mb (" + maxMemoryMb + "), got " + maxSandboxMemoryMb);
      }
    }
  }

  /** Where grain workers run. */
  public enum Backend {
    /** One Docker container per application (the default where an engine is reachable). */
    DOCKER,
    /** Plain host processes in their own process group (no container). */
    PROCESS;

    /**
     * The backend named {@code text} ({@code docker} or {@code process}).
     *
     * @throws ConfigException naming the value otherwise
     */
    public static Backend parse(String text) {
      try {
        return valueOf(text.toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw ConfigException.invalid("backend", "must be docker or process, got '" + text + "'");
      }
    }

    /** The name used in the config file and the API. */
    public String wireName() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  public SandboxConfig {
    if (backend == null) {
      throw ConfigException.invalid("backend", "is required");
    }
    if (baseImage == null || baseImage.isBlank()) {
      throw ConfigException.invalid("base_image", "must be non-blank");
    }
    if (python == null) {
      throw ConfigException.invalid("python", "is required");
    }
    sourceDirs = List.copyOf(sourceDirs);
    if (!(cpus > 0)) {
      throw ConfigException.invalid("cpus", "must be > 0, got " + cpus);
    }
    if (pidsLimit <= 0) {
      throw ConfigException.invalid("pids_limit", "must be > 0, got " + pidsLimit);
    }
    if (tmpSizeMb <= 0) {
      throw ConfigException.invalid("tmp_size_mb", "must be > 0, got " + tmpSizeMb);
    }
    if (limits == null) {
      throw ConfigException.invalid("limits", "is required");
    }
  }
}
