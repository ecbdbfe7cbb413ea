package dev.sand.agent.apps;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AppArchiveTest {
  @TempDir Path dir;

  private static byte[] tar(String name, String content, boolean symlink) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(out)) {
      tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      TarArchiveEntry entry =
          symlink
              ? new TarArchiveEntry(name, TarArchiveEntry.LF_SYMLINK)
              : new TarArchiveEntry(name);
      byte[] bytes = content.getBytes(StandardCharsets.UTF_8);
      if (symlink) {
        entry.setLinkName(content);
      } else {
        entry.setSize(bytes.length);
      }
      tar.putArchiveEntry(entry);
      if (!symlink) {
        tar.write(bytes);
      }
      tar.closeArchiveEntry();
    }
    return out.toByteArray();
  }

  /** A tar's files land under the target directory with their content. */
  @Test
  void unpack_tar_writesFiles() throws IOException {
    AppArchive.unpack(tar("grains/a.py", "x = 1\n", false), dir);
    assertThat(Files.readString(dir.resolve("grains/a.py"))).isEqualTo("x = 1\n");
  }

  /** A zip is accepted as well. */
  @Test
  void unpack_zip_writesFiles() throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (ZipOutputStream zip = new ZipOutputStream(out)) {
      zip.putNextEntry(new ZipEntry("app.yaml"));
      zip.write("name: x\n".getBytes(StandardCharsets.UTF_8));
      zip.closeEntry();
    }
    AppArchive.unpack(out.toByteArray(), dir);
    assertThat(dir.resolve("app.yaml")).hasContent("name: x");
  }

  /** An entry that climbs out of the app directory is refused, naming it. */
  @Test
  void unpack_parentTraversal_isRefused() throws IOException {
    byte[] evil = tar("../../etc/evil", "boom", false);
    assertThatThrownBy(() -> AppArchive.unpack(evil, dir.resolve("app")))
        .isInstanceOf(DeployException.class)
        .hasMessageContaining("../../etc/evil")
        .hasMessageContaining("outside");
    assertThat(dir.resolve("etc")).doesNotExist();
  }

  /** Links could point anywhere on the host; they are refused. */
  @Test
  void unpack_symlink_isRefused() throws IOException {
    byte[] link = tar("grains/a.py", "/etc/passwd", true);
    assertThatThrownBy(() -> AppArchive.unpack(link, dir))
        .isInstanceOf(DeployException.class)
        .hasMessageContaining("only files and directories");
  }

  /** Bytes that are no archive are refused as invalid, saying so. */
  @Test
  void unpack_garbage_isRefusedAsInvalid() {
    assertThatThrownBy(
            () -> AppArchive.unpack("not an archive at all".getBytes(StandardCharsets.UTF_8), dir))
        .isInstanceOf(DeployException.class)
        .satisfies(
            e ->
                assertThat(((DeployException) e).reason())
                    .isEqualTo(DeployException.Reason.INVALID));
  }
}
