package dev.sand.agent.apps;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Comparator;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The apps' files on this host, under {@code <state_dir>/apps}: unpacks an upload into a fresh
 * directory, installs its Python requirements there with pip ({@code .sand-site}), moves it to the
 * app's versioned directory and deletes what is no longer used. Blocking (pip may take minutes);
 * thread-safe as long as callers do not work on the same app at once.
 */
final class AppFiles {
  private static final Logger LOG = LoggerFactory.getLogger(AppFiles.class);
  private static final Duration PIP_TIMEOUT = Duration.ofMinutes(10);

  /** Where an app's requirements are installed, inside its directory. */
  static final String SITE_DIR = ".sand-site";

  private final Path appsDir;
  private final Path python;

  /**
   * @param appsDir the directory holding every app's files
   * @param python the interpreter whose pip installs requirements
   */
  AppFiles(Path appsDir, Path python) {
    this.appsDir = appsDir;
    this.python = python;
  }

  /**
   * Unpacks {@code archive} (tar, tar.gz or zip) into a new directory, which the caller deletes
   * with {@link #deleteTree} once done (after {@link #place} it is gone already).
   *
   * @throws DeployException (INVALID) naming the entry when the archive is unreadable or unsafe;
   *     nothing unpacked is left behind
   */
  Path unpack(byte[] archive) {
    Path incoming = appsDir.resolve(".incoming-" + UUID.randomUUID());
    try {
      AppArchive.unpack(archive, incoming);
    } catch (RuntimeException e) {
      deleteTree(incoming);
      throw e;
    }
    return incoming;
  }

  /**
   * Installs the requirements file {@code file} (relative to {@code dir}) into {@code
   * dir/.sand-site}.
   *
   * @throws DeployException (INVALID) when the file is outside the app, pip fails or takes over 10
   *     min; (INTERNAL) when pip cannot run
   */
  void installRequirements(Path dir, String file) {
    Path requirements = dir.resolve(file).normalize();
    if (!requirements.startsWith(dir)) {
      throw new DeployException(
          DeployException.Reason.INVALID,
          "app.yaml: requirements: must stay inside the app, got " + file);
    }
    ProcessBuilder builder =
        new ProcessBuilder(
            python.toString(),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
            "--target",
            dir.resolve(SITE_DIR).toString(),
            "-r",
            requirements.toString());
    builder.redirectErrorStream(true);
    try {
      Path log = Files.createTempFile("sand-pip", ".log");
      builder.redirectOutput(log.toFile());
      Process process = builder.start();
      boolean done = process.waitFor(PIP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
      String output = Files.readString(log);
      Files.deleteIfExists(log);
      if (!done) {
        process.destroyForcibly();
        throw new DeployException(
            DeployException.Reason.INVALID,
            file + ": installing the requirements took over " + PIP_TIMEOUT.toMinutes() + " min");
      }
      if (process.exitValue() != 0) {
        throw new DeployException(
            DeployException.Reason.INVALID,
            file
                + ": pip could not install the requirements:\n"
                + AppDescriber.lastLines(output, 15));
      }
    } catch (IOException e) {
      throw new DeployException(
          DeployException.Reason.INTERNAL, "cannot run pip: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new DeployException(
          DeployException.Reason.INTERNAL, "interrupted while installing requirements");
    }
  }

  /**
   * Moves the unpacked app {@code incoming} to {@code <apps>/<app>/v<version>}, replacing what is
   * there.
   *
   * @return the app's new directory
   * @throws DeployException (INTERNAL) when the move fails
   */
  Path place(Path incoming, String app, int version) {
    Path to = appsDir.resolve(app).resolve("v" + version);
    try {
      deleteTree(to);
      Files.createDirectories(to.getParent());
      Files.move(incoming, to, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new DeployException(
          DeployException.Reason.INTERNAL,
          "cannot move the app into " + to + ": " + e.getMessage());
    }
    return to;
  }

  /** Deletes every version of {@code app}. Never throws. */
  void deleteApp(String app) {
    deleteTree(appsDir.resolve(app));
  }

  /** Deletes {@code root} and everything below it; logs what cannot be deleted. Never throws. */
  static void deleteTree(Path root) {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(root)) {
      walk.sorted(Comparator.reverseOrder())
          .forEach(
              p -> {
                try {
                  Files.deleteIfExists(p);
                } catch (IOException e) {
                  LOG.atWarn()
                      .addKeyValue("path", p)
                      .addKeyValue("error", e.toString())
                      .log("delete failed");
                }
              });
    } catch (IOException e) {
      LOG.atWarn()
          .addKeyValue("path", root)
          .addKeyValue("error", e.toString())
          .log("delete failed");
    }
  }
}
