package dev.sand.frontend;

import dev.sand.config.ClusterConfig;
import dev.sand.config.ConfigException;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code java -jar frontend.jar --config STATE/conf/cluster.json --port 18081}
 *
 * <p>The port must be one of {@code frontend.ports}: nginx routes only to those. Exit status: 143
 * after SIGTERM (130 after SIGINT), as for any JVM stopped by a signal, once the shutdown hook has
 * stopped gracefully; 1 when start-up fails, 2 on bad arguments.
 */
public final class Main {
  private static final Logger LOG = LoggerFactory.getLogger(Main.class);
  private static final String USAGE = "usage: frontend --config PATH/cluster.json --port PORT";

  private Main() {}

  public static void main(String[] args) throws InterruptedException {
    Path configFile = null;
    Integer port = null;
    for (int i = 0; i < args.length; i++) {
      if ("--config".equals(args[i]) && i + 1 < args.length) {
        configFile = Path.of(args[++i]);
      } else if ("--port".equals(args[i]) && i + 1 < args.length) {
        try {
          port = Integer.valueOf(args[++i]);
        } catch (NumberFormatException e) {
          usage("--port must be an integer, got '" + args[i] + "'");
        }
      } else {
        usage("unknown argument '" + args[i] + "'");
      }
    }
    if (configFile == null || port == null) {
      usage("--config and --port are required");
    }
    ClusterConfig config;
    try {
      config = ClusterConfig.load(configFile);
    } catch (ConfigException e) {
      LOG.atError().addKeyValue("error", e.getMessage()).log("invalid configuration");
      System.exit(1);
      return;
    }
    if (!config.frontend().ports().contains(port)) {
      LOG.atError()
          .addKeyValue(
              "error",
              "--port "
                  + port
                  + " is not one of frontend.ports "
                  + config.frontend().ports()
                  + " in "
                  + configFile)
          .log("invalid configuration");
      System.exit(1);
    }
    Frontend frontend = Frontend.create(config, port);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  frontend.close();
                  stopped.countDown();
                },
                "shutdown"));
    try {
      frontend.start();
    } catch (IllegalStateException e) {
      LOG.atError().addKeyValue("error", e.getMessage()).log("start-up failed");
      System.exit(1);
    }
    stopped.await();
  }

  private static void usage(String problem) {
    System.err.println(problem + "\n" + USAGE);
    System.exit(2);
  }
}
