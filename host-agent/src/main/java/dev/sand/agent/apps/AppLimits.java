package dev.sand.agent.apps;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.config.SandboxConfig;
import java.util.ArrayList;
import java.util.List;

/**
 * The CPU weight and memory an app's sandbox gets (decision 0022): what its {@code app.yaml} asks
 * for ({@code limits.cpu_weight}, {@code limits.memory_mb} per grain instance), else the operator's
 * defaults ({@code [sandbox] cpu_weight, memory_mb}), never above the operator's maxima ({@code
 * max_cpu_weight, max_memory_mb}): a deploy asking for more is refused, naming the field, the value
 * and the limit. Immutable.
 *
 * @param cpuWeight the sandbox's CPU weight (cgroup v2 scale)
 * @param memoryMb memory of one grain instance, MiB
 */
record AppLimits(int cpuWeight, int memoryMb) {
  private static final String CPU_WEIGHT = "cpu_weight";
  private static final String MEMORY_MB = "memory_mb";

  /**
   * The limits of the app whose validated description holds {@code limits} (null fields: not set).
   *
   * @throws DeployException (INVALID) listing each limit above the operator's maximum
   */
  static AppLimits of(JsonNode limits, SandboxConfig.Limits operator) {
    JsonNode weight = limits.path(CPU_WEIGHT);
    JsonNode memory = limits.path(MEMORY_MB);
    int cpuWeight = weight.isInt() ? weight.intValue() : operator.cpuWeight();
    int memoryMb = memory.isInt() ? memory.intValue() : operator.memoryMb();
    List<String> problems = new ArrayList<>();
    if (cpuWeight > operator.maxCpuWeight()) {
      problems.add(aboveMaximum(CPU_WEIGHT, cpuWeight, operator.maxCpuWeight(), "max_cpu_weight"));
    }
    if (memoryMb > operator.maxMemoryMb()) {
      problems.add(aboveMaximum(MEMORY_MB, memoryMb, operator.maxMemoryMb(), "max_memory_mb"));
    }
    if (!problems.isEmpty()) {
      throw new DeployException(DeployException.Reason.INVALID, problems);
    }
    return new AppLimits(cpuWeight, memoryMb);
  }

  private static String aboveMaximum(String field, int value, int limit, String key) {
    return "app.yaml: limits."
        + field
        + " is "
        + value
        + ", above this cluster's maximum of "
        + limit
        + " (sandbox."
        + key
        + " in the cluster config)";
  }

  /**
   * Memory of the whole sandbox: one instance's worth per grain it runs (each worker holds one
   * idle) plus one for bursts, at most {@code cap} MiB.
   */
  int sandboxMemoryMb(int grains, int cap) {
    return (int) Math.min((long) memoryMb * (grains + 1), cap);
  }

  /** Writes the effective values into {@code description}'s {@code limits}, for the metadata. */
  void writeTo(ObjectNode description) {
    JsonNode limits = description.path("limits");
    ObjectNode target = limits.isObject() ? (ObjectNode) limits : description.putObject("limits");
    target.put(CPU_WEIGHT, cpuWeight);
    target.put(MEMORY_MB, memoryMb);
  }
}
