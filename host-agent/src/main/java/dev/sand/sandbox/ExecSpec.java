package dev.sand.sandbox;

import java.util.List;
import java.util.Map;

/**
 * A process to start inside a running sandbox (a grain worker).
 *
 * @param command argv, non-empty
 * @param env extra environment for the process
 * @param workDir absolute working directory inside the sandbox, or null for the sandbox's default
 */
public record ExecSpec(List<String> command, Map<String, String> env, String workDir) {
  public ExecSpec {
    command = List.copyOf(command);
    if (command.isEmpty()) {
      throw new IllegalArgumentException("exec command must be non-empty");
    }
    env = Map.copyOf(env);
    if (workDir != null && !workDir.startsWith("/")) {
      throw new IllegalArgumentException("exec work dir must be absolute, got " + workDir);
    }
  }
}
