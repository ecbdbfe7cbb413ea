package dev.sand.service;

import dev.sand.config.ClusterConfig;
import dev.sand.config.ConfigException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The start-up both services' {@code main}s share: their arguments, the cluster configuration, and
 * a life that ends with a signal.
 *
 * <p>Exit status: 143 after SIGTERM (130 after SIGINT), as for any JVM stopped by a signal, once
 * the shutdown hook has closed the service; 1 when the configuration is invalid or start-up fails;
 * 2 on bad arguments; 0 after {@code --help}.
 */
public final class ServiceMain {
  private static final Logger LOG = LoggerFactory.getLogger(ServiceMain.class);

  /** Starts a service built from the configuration (a port taken, a dependency away: it throws). */
  @FunctionalInterface
  public interface Startup {
    void start() throws Exception;
  }

  private final String usage;

  /**
   * @param usage the one-line usage printed with an argument error and for {@code --help}
   */
  public ServiceMain(String usage) {
    this.usage = usage;
  }

  /**
   * The value of each of {@code flags} (options that take one value, {@code --config} among them),
   * all required; anything else prints the usage and exits 2.
   */
  public Map<String, String> arguments(String[] args, List<String> flags) {
    Map<String, String> values = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      if ("--help".equals(args[i]) || "-h".equals(args[i])) {
        System.out.println(usage);
        System.exit(0);
      } else if (flags.contains(args[i]) && i + 1 < args.length) {
        values.put(args[i], args[++i]);
      } else {
        usageError("unknown argument '" + args[i] + "'");
      }
    }
    for (String flag : flags) {
      if (!values.containsKey(flag)) {
        usageError(String.join(" and ", flags) + " are required");
      }
    }
    return values;
  }

  /** Prints {@code message} and the usage on stderr and exits 2. */
  public void usageError(String message) {
    System.err.println(message + "\n" + usage);
    System.exit(2);
  }

  /** The configuration in {@code file}; logs why and exits 1 when it is invalid. */
  public ClusterConfig config(Path file) {
    try {
      return ClusterConfig.load(file);
    } catch (ConfigException e) {
      invalid(e.getMessage());
      throw new IllegalStateException("unreachable");
    }
  }

  /** Logs an invalid configuration ({@code error}) and exits 1. */
  public void invalid(String error) {
    LOG.atError().addKeyValue("error", error).log("invalid configuration");
    System.exit(1);
  }

  /**
   * Starts {@code service} with {@code startup} and blocks until a signal ends the JVM, whose
   * shutdown hook closes the service; logs why and exits 1 when start-up throws.
   */
  public void run(AutoCloseable service, Startup startup) throws InterruptedException {
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  try {
                    service.close();
                  } catch (Exception e) {
                    LOG.atWarn().addKeyValue("error", e.toString()).log("close failed");
                  } finally {
                    stopped.countDown();
                  }
                },
                "shutdown"));
    try {
      startup.start();
    } catch (Exception e) {
      LOG.atError().addKeyValue("error", e.getMessage()).log("start-up failed");
      System.exit(1);
    }
    stopped.await();
  }
}
