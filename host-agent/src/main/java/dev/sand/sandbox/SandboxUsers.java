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
 * users (61184–65519) and the usual {@code /etc/subuid} ranges (100000 + 65536 per user). A new uid
 * is claimed in the machine's registry ({@link #MACHINE_REGISTRY}, under a file lock) before it is
 * recorded here, so the hosts of {@code sand up --hosts N}, and clusters of other state dirs on the
 * same machine, never hand out the same number: the kernel counts {@code RLIMIT_NPROC} per uid
 * across the whole machine, so a shared uid let one tenant's fork bomb stop another tenant's
 * sandbox from starting a process (decision 0046). Thread-safe; one agent per state dir (the
 * supervisor runs one).
 */
public final class SandboxUsers {
  /** The first uid handed out. */
  public static final int FIRST_UID = 2_000_000_000;

  /** Every uid handed out on this machine, one {@code <uid> <allocation file> <app>} line each. */
  public static final Path MACHINE_REGISTRY = Path.of("/var/lib/sand/sandbox-uids");

  private final Path file;
  private final Path registry;
  private Map<String, Integer> uids;
  private int highest;

  /**
   * @param file this host's allocation file; created (with its directory) on the first allocation
   * @param registry the machine's registry ({@link #MACHINE_REGISTRY} but in tests); likewise
   */
  public SandboxUsers(Path file, Path registry) {
    this.file = file;
    this.registry = registry;
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
      uid = claim(app);
      append(file, app + " " + uid + "\n");
      uids.put(app, uid);
      highest = uid;
    }
    return new SandboxSpec.User(uid, uid);
  }

  private void load() {
    if (uids != null) {
      return;
    }
    Map<String, Integer> read = new HashMap<>();
    int top = FIRST_UID - 1;
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
        top = Math.max(top, uid);
      }
    } catch (IOException | NumberFormatException e) {
      throw new SandboxException("cannot read the sandbox uids in " + file + ": " + e, e);
    }
    uids = read;
    highest = top;
  }

  /**
   * A uid above every one in the machine's registry and in this host's file, written to the
   * registry (and forced to disk) while its lock is held: agents of other state dirs claim under
   * the same lock. The JVM-wide monitor keeps two instances in one JVM (tests) from asking the
   * operating system for overlapping locks, which it refuses.
   */
  private int claim(String app) {
    synchronized (SandboxUsers.class) {
      try (FileChannel channel = open(registry, StandardOpenOption.READ)) {
        channel.lock(); // released when the channel closes
        ByteBuffer registered = readAll(channel);
        int top = Math.max(highest, highestIn(registered));
        if (top == Integer.MAX_VALUE) {
          throw new SandboxException("sandbox uids in " + registry + " are exhausted", null);
        }
        int uid = top + 1;
        // after a torn last line, a line of its own: joined to it, this uid would not count
        boolean torn = registered.limit() > 0 && registered.get(registered.limit() - 1) != '\n';
        String line = (torn ? "\n" : "") + uid + " " + file.toAbsolutePath() + " " + app + "\n";
        channel.write(ByteBuffer.wrap(line.getBytes(StandardCharsets.UTF_8)), channel.size());
        channel.force(true);
        return uid;
      } catch (IOException e) {
        throw new SandboxException("cannot claim a sandbox uid in " + registry + ": " + e, e);
      }
    }
  }

  /** {@code file} opened to write (and {@code mode}), created with its directory if need be. */
  private static FileChannel open(Path file, StandardOpenOption mode) throws IOException {
    Files.createDirectories(file.getParent());
    return FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, mode);
  }

  private static ByteBuffer readAll(FileChannel channel) throws IOException {
    ByteBuffer bytes = ByteBuffer.allocate(Math.toIntExact(channel.size()));
    while (bytes.hasRemaining() && channel.read(bytes, bytes.position()) >= 0) {
      // read(…, position) does not move the channel; the buffer's position does the counting
    }
    return bytes.flip();
  }

  /** The highest uid registered; a line torn by a crash during its write never counted. */
  private static int highestIn(ByteBuffer registered) {
    int highest = FIRST_UID - 1;
    String text = StandardCharsets.UTF_8.decode(registered.duplicate()).toString();
    for (String line : text.split("\n")) {
      String[] parts = line.trim().split("\\s+");
      if (parts.length == 3 && parts[0].matches("\\d{1,10}")) {
        long uid = Long.parseLong(parts[0]);
        if (uid >= FIRST_UID && uid <= Integer.MAX_VALUE) {
          highest = Math.max(highest, (int) uid);
        }
      }
    }
    return highest;
  }

  private static void append(Path file, String line) {
    try (FileChannel out = open(file, StandardOpenOption.APPEND)) {
      out.write(ByteBuffer.wrap(line.getBytes(StandardCharsets.UTF_8)));
      out.force(true);
    } catch (IOException e) {
      throw new SandboxException("cannot record a sandbox uid in " + file + ": " + e, e);
    }
  }
}
