package dev.sand.agent;

import dev.sand.config.ClusterConfig;
import dev.sand.service.ServiceMain;
import java.nio.file.Path;
import java.util.List;

/**
 * {@code java -jar host-agent.jar --config STATE/conf/cluster.json}
 *
 * <p>Exit status as {@link ServiceMain} says: 1 also when a dependency stays unreachable for 60 s.
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) throws InterruptedException {
    ServiceMain main = new ServiceMain("usage: host-agent --config PATH/cluster.json");
    ClusterConfig config =
        main.config(Path.of(main.arguments(args, List.of("--config")).get("--config")));
    HostAgent agent = HostAgent.create(config);
    main.run(
        agent,
        () -> {
          agent.start();
          agent.awaitReady();
        });
  }
}
