package dev.sand.config;

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
 * @param cpus CPU limit of one Docker sandbox, > 0
 * @param pidsLimit most processes one sandbox may hold, > 0 (process backend: per application uid)
 * @param tmpSizeMb size of a sandbox's writable {@code /tmp} in MiB, > 0
 */
public record SandboxConfig(
    Backend backend,
    String baseImage,
    Path python,
    List<Path> sourceDirs,
    Path siteDir,
    double cpus,
    int pidsLimit,
    int tmpSizeMb) {

  /** {@code tmp_size_mb} of config files that predate it. */
  public static final int DEFAULT_TMP_SIZE_MB = 64;

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
  }
}
