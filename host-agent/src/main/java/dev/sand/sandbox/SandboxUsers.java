package dev.sand.sandbox;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Gives every application on a host a uid of its own, kept across agent restarts and never given to
 * another application.
 *
 * <p>The allocation is an append-only file in the host's state dir, one {@code <app> <uid>} line
 * per application, written (and forced to disk) before the uid is handed out. A uid once written is
 * never reused, also after the app is undeployed: files or processes an app left behind can never
 * belong to a later one. An app deployed again under the same name gets its old uid back (its name
 * is its identity here, as for its Redis ACL user). The gid equals the uid.
 *
 * <p>uids start at {@link #FIRST_UID}: far above login accounts (1000–60000), systemd's dynamic
 * users (61184–65519) and the usual {@code /etc/subuid} ranges (100000 + 65536 per user), so a
 * sandbox never shares a uid with anything else on the machine. Thread-safe; one agent per state
 * dir (the supervisor runs one).
 */
public final class SandboxUsers {
  /** The first uid handed out. */
  public static final int FIRST_UID = 2_000_000_000;

  private final Path file;
  private Map<String, Integer> uids;
  private int next;

  /**
   * @param file the allocation file; created (with its directory) on the first allocation
   */
  public SandboxUsers(Path file) {
    this.file = file;
  }

  /**
   * The user of {@code app}: its recorded uid, or a fresh one recorded now.
   *
   * @throws SandboxException when the allocation file cannot be read or written
   */
  public synchronized SandboxSpec.User of(String app) {
    load();
    Integer uid = uids.get(app);
    if (uid == null) {
      if (next == Integer.MAX_VALUE) {
        throw new SandboxException("sandbox uids in " + file + " are exhausted", null);
      }
      uid = next;
      append(app + " " + uid + "\n");
      uids.put(app, uid);
      next = uid + 1;
    }
    return new SandboxSpec.User(uid, uid);
  }

  private void load() {
    if (uids != null) {
      return;
    }
    Map<String, Integer> read = new HashMap<>();
    int highest = FIRST_UID - 1;
    try {
      List<String> lines = Files.exists(file) ? Files.readAllLines(file) : List.of();
      for (String line : lines) {
        String[] parts = line.trim().split("\\s+");
        if (parts.length != 2) {
          continue; // a line torn by a crash during its write was never handed out
        }
        int uid = Integer.parseInt(parts[1]);
        if (uid < FIRST_UID) {
          continue; // likewise: only a torn line can hold a uid below the range
        }
        read.putIfAbsent(parts[0], uid);
        highest = Math.max(highest, uid);
      }
    } catch (IOException | NumberFormatException e) {
      throw new SandboxException("cannot read the sandbox uids in " + file + ": " + e, e);
    }
    uids = read;
    next = highest + 1;
  }

  private void append(String line) {
    try {
      Files.createDirectories(file.getParent());
      try (FileChannel out =
          FileChannel.open(
              file,
              StandardOpenOption.CREATE,
              StandardOpenOption.WRITE,
              StandardOpenOption.APPEND)) {
        out.write(ByteBuffer.wrap(line.getBytes(StandardCharsets.UTF_8)));
        out.force(true);
      }
    } catch (IOException e) {
      throw new SandboxException("cannot record a sandbox uid in " + file + ": " + e, e);
    }
  }
}
