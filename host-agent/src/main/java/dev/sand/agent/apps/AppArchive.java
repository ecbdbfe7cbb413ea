package dev.sand.agent.apps;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorInputStream;

/**
 * Unpacks an uploaded application (tar, tar.gz or zip) into a directory, refusing anything that
 * could write outside it: absolute names, {@code ..}, links, devices. Limits the unpacked size and
 * the number of entries so that an upload cannot fill the disk.
 */
final class AppArchive {
  static final long MAX_UNPACKED_BYTES = 256L * 1024 * 1024;
  static final int MAX_ENTRIES = 20_000;

  private AppArchive() {}

  /**
   * Unpacks {@code archive} into {@code target} (created if missing). Blocking.
   *
   * @throws DeployException (INVALID) naming the entry when the archive is unreadable or unsafe
   */
  static void unpack(byte[] archive, Path target) {
    try {
      Files.createDirectories(target);
      if (archive.length >= 4 && archive[0] == 'P' && archive[1] == 'K') {
        unzip(archive, target);
      } else if (archive.length >= 2
          && (archive[0] & 0xff) == 0x1f
          && (archive[1] & 0xff) == 0x8b) {
        untar(new GzipCompressorInputStream(new ByteArrayInputStream(archive)), target);
      } else {
        untar(new ByteArrayInputStream(archive), target);
      }
    } catch (IOException | IllegalArgumentException e) {
      throw new DeployException(
          DeployException.Reason.INVALID,
          "the upload is not a readable tar, tar.gz or zip archive: " + e.getMessage());
    }
  }

  private static void untar(InputStream in, Path target) throws IOException {
    long total = 0;
    int entries = 0;
    try (TarArchiveInputStream tar = new TarArchiveInputStream(in)) {
      TarArchiveEntry entry;
      while ((entry = tar.getNextEntry()) != null) {
        entries = count(entries);
        if (entry.isSymbolicLink() || entry.isLink() || !(entry.isFile() || entry.isDirectory())) {
          throw new DeployException(
              DeployException.Reason.INVALID,
              "archive entry '" + entry.getName() + "': only files and directories are allowed");
        }
        total = write(tar, entry.getName(), entry.isDirectory(), target, total);
      }
    }
    if (entries == 0) {
      throw new DeployException(DeployException.Reason.INVALID, "the uploaded archive is empty");
    }
  }

  private static void unzip(byte[] archive, Path target) throws IOException {
    long total = 0;
    int entries = 0;
    try (ZipInputStream zip = new ZipInputStream(new ByteArrayInputStream(archive))) {
      ZipEntry entry;
      while ((entry = zip.getNextEntry()) != null) {
        entries = count(entries);
        total = write(zip, entry.getName(), entry.isDirectory(), target, total);
      }
    }
    if (entries == 0) {
      throw new DeployException(DeployException.Reason.INVALID, "the uploaded archive is empty");
    }
  }

  private static int count(int entries) {
    if (entries + 1 > MAX_ENTRIES) {
      throw new DeployException(
          DeployException.Reason.INVALID,
          "the archive holds more than " + MAX_ENTRIES + " entries");
    }
    return entries + 1;
  }

  private static long write(InputStream in, String name, boolean directory, Path target, long total)
      throws IOException {
    Path path = safe(target, name);
    if (directory) {
      Files.createDirectories(path);
      return total;
    }
    Files.createDirectories(path.getParent());
    long left = MAX_UNPACKED_BYTES - total;
    long written = 0;
    try (var out = Files.newOutputStream(path)) {
      byte[] buffer = new byte[64 * 1024];
      int n;
      while ((n = in.read(buffer)) > 0) {
        written += n;
        if (written > left) {
          throw new DeployException(
              DeployException.Reason.INVALID,
              "the archive unpacks to more than " + MAX_UNPACKED_BYTES / (1024 * 1024) + " MiB");
        }
        out.write(buffer, 0, n);
      }
    }
    return total + written;
  }

  private static Path safe(Path target, String name) {
    String clean = name.startsWith("./") ? name.substring(2) : name;
    if (clean.isEmpty() || clean.equals(".")) {
      return target;
    }
    Path relative = Path.of(clean);
    Path path = target.resolve(relative).normalize();
    if (relative.isAbsolute() || !path.startsWith(target)) {
      throw new DeployException(
          DeployException.Reason.INVALID,
          "archive entry '" + name + "' would be written outside the application directory");
    }
    return path;
  }
}
