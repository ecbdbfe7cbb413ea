package dev.sand.agent.apps;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.config.ClusterConfig;
import dev.sand.config.SandboxConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;

/**
 * Decides whether an unpacked app may be deployed: the Python rules ({@link AppDescriber}), the
 * operator's maxima ({@link AppLimits}), the cluster's prerequisites and the deploy's remote
 * grains. Changes nothing; thread-safe.
 */
final class AppValidation {
  private final AppDescriber describer;
  private final List<String> clusterHosts;
  private final SandboxConfig.Limits limits;
  private final Consumer<? super ObjectNode> prerequisites;

  /**
   * @param prerequisites checks a new deploy's description against the cluster and throws {@link
   *     DeployException} naming what is missing
   */
  AppValidation(
      ClusterConfig config, ObjectMapper mapper, Consumer<? super ObjectNode> prerequisites) {
    SandboxConfig sandbox = config.sandbox();
    this.describer =
        new AppDescriber(sandbox.python(), SandboxSpecs.pythonPath(sandbox.sourceDirs()), mapper);
    this.clusterHosts = config.hosts().stream().map(h -> h.id()).toList();
    this.limits = sandbox.limits();
    this.prerequisites = prerequisites;
  }

  /** The ids of the cluster's hosts, which a placement names. */
  List<String> clusterHosts() {
    return clusterHosts;
  }

  /**
   * Describes the app in {@code incoming} for a deploy, its limits written into the description.
   * Blocking (runs Python).
   *
   * @param brandNew whether the deploy is new (its prerequisites are checked) rather than a
   *     deployment on record brought back (which is not refused for them)
   * @throws DeployException (INVALID) listing every problem
   */
  AppDescriber.Description describe(Path incoming, DeployOptions options, boolean brandNew) {
    AppDescriber.Description described =
        describer.describe(incoming, clusterHosts, options.placement());
    // refused here, before anything of the deploy happened, when above the operator's maxima
    AppLimits.of(described.app().path("limits"), limits).writeTo(described.app());
    if (brandNew) {
      prerequisites.accept(described.app());
    }
    return described;
  }

  /**
   * Checks the app in {@code incoming} as a deploy with {@code options} would, remote grains
   * included. Blocking (runs Python).
   *
   * @return the description a deploy would store as the app's metadata (without version)
   * @throws DeployException (INVALID) listing every problem, as a deploy would refuse the app
   */
  ObjectNode validate(Path incoming, DeployOptions options) {
    ObjectNode description = describer.describe(incoming, clusterHosts, options.placement()).app();
    requireGrains(description, options.remoteGrains());
    AppLimits.of(description.path("limits"), limits).writeTo(description);
    prerequisites.accept(description);
    return description;
  }

  /**
   * @throws DeployException (INVALID) naming the first of {@code remote} that is not a grain of the
   *     described app
   */
  static void requireGrains(ObjectNode description, Set<String> remote) {
    List<String> all = new ArrayList<>();
    description.path("grains").forEach(g -> all.add(g.asText()));
    for (String grain : remote) {
      if (!all.contains(grain)) {
        throw new DeployException(
            DeployException.Reason.INVALID,
            "remote_grains: '"
                + grain
                + "' is not a grain of app '"
                + description.path("name").asText()
                + "'; grains: "
                + all);
      }
    }
  }
}
