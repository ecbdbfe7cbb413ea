package dev.sand.bus.redis;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * A real redis-server for one test class, on a unix socket in a temporary directory. Persistence is
 * off. {@link #close} kills it and removes the directory. Shared with the tests of the modules
 * above the local bus (test-jar).
 */
public final class RedisServer implements AutoCloseable {
  private final Path dir;
  private Process process;

  private RedisServer(Path dir, Process process) {
    this.dir = dir;
    this.process = process;
  }

  /** Starts redis-server and waits (up to 10 s) for its socket. */
  public static RedisServer start() throws IOException, InterruptedException {
    Path dir = Files.createTempDirectory("sand-fe-redis");
    return new RedisServer(dir, launch(dir));
  }

  /** Stops the server: an outage, until {@link #relaunch}. */
  public void kill() throws IOException {
    stop();
    Files.deleteIfExists(socket());
  }

  /** Starts a new, empty server on the same socket after {@link #kill}. */
  public void relaunch() throws IOException, InterruptedException {
    process = launch(dir);
  }

  private static Process launch(Path dir) throws IOException, InterruptedException {
    Path socket = dir.resolve("r.sock");
    Process process =
        new ProcessBuilder(
                "redis-server",
                "--port",
                "0",
                "--unixsocket",
                socket.toString(),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                dir.toString())
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("redis.log").toFile())
            .start();
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (!Files.exists(socket)) {
      if (!process.isAlive() || System.nanoTime() > deadline) {
        process.destroyForcibly();
        throw new IllegalStateException(
            "redis-server did not open "
                + socket
                + ": "
                + Files.readString(dir.resolve("redis.log")));
      }
      Thread.sleep(20);
    }
    return process;
  }

  public Path socket() {
    return dir.resolve("r.sock");
  }

  @Override
  public void close() throws IOException {
    stop();
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }

  private void stop() {
    process.destroy();
    try {
      if (!process.waitFor(5, java.util.concurrent.TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(5, java.util.concurrent.TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }
}
