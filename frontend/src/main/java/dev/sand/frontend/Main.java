package dev.sand.frontend;

import dev.sand.config.ClusterConfig;
import dev.sand.service.ServiceMain;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * {@code java -jar frontend.jar --config STATE/conf/cluster.json --port 18081}
 *
 * <p>The port must be one of {@code frontend.ports}: nginx routes only to those. Exit status as
 * {@link ServiceMain} says.
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) throws InterruptedException {
    ServiceMain main = new ServiceMain("usage: frontend --config PATH/cluster.json --port PORT");
    Map<String, String> values = main.arguments(args, List.of("--config", "--port"));
    int port = 0;
    try {
      port = Integer.parseInt(values.get("--port"));
    } catch (NumberFormatException e) {
      main.usageError("--port must be an integer, got '" + values.get("--port") + "'");
    }
    Path configFile = Path.of(values.get("--config"));
    ClusterConfig config = main.config(configFile);
    if (!config.frontend().ports().contains(port)) {
      main.invalid(
          "--port "
              + port
              + " is not one of frontend.ports "
              + config.frontend().ports()
              + " in "
              + configFile);
    }
    Frontend frontend = Frontend.create(config, port);
    main.run(frontend, frontend::start);
  }
}
