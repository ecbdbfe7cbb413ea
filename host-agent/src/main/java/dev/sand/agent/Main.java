package dev.sand.agent;

import dev.sand.config.ClusterConfig;
import dev.sand.config.ConfigException;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code java -jar host-agent.jar --config STATE/conf/cluster.json}
 *
 * <p>Exit status: 143 after SIGTERM (130 after SIGINT), as for any JVM stopped by a signal, once
 * the shutdown hook has stopped gracefully; 1 when start-up fails (bad config, port taken, a
 * dependency unreachable for 60 s), 2 on bad arguments.
 */
public final class Main {
  private static final Logger LOG = LoggerFactory.getLogger(Main.class);
  private static final String USAGE = "usage: host-agent --config PATH/cluster.json";

  private Main() {}

  public static void main(String[] args) throws InterruptedException {
    Path configFile = parseArgs(args);
    ClusterConfig config;
    try {
      config = ClusterConfig.load(configFile);
    } catch (ConfigException e) {
      LOG.atError().addKeyValue("error", e.getMessage()).log("invalid configuration");
      System.exit(1);
      return;
    }
    HostAgent agent = HostAgent.create(config);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  agent.close();
                  stopped.countDown();
                },
                "shutdown"));
    try {
      agent.start();
      agent.awaitReady();
    } catch (StartupException e) {
      LOG.atError().addKeyValue("error", e.getMessage()).log("start-up failed");
      System.exit(1);
    }
    stopped.await();
  }

  private static Path parseArgs(String[] args) {
    Path config = null;
    for (int i = 0; i < args.length; i++) {
      if ("--config".equals(args[i]) && i + 1 < args.length) {
        config = Path.of(args[++i]);
      } else if ("--help".equals(args[i]) || "-h".equals(args[i])) {
        System.out.println(USAGE);
        System.exit(0);
      } else {
        System.err.println("unknown argument '" + args[i] + "'\n" + USAGE);
        System.exit(2);
      }
    }
    if (config == null) {
      System.err.println("--config is required\n" + USAGE);
      System.exit(2);
    }
    return config;
  }
}
