package dev.sand.agent.apps;

import dev.sand.sandbox.SandboxException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The agent's own notes about each app (deploys, restarts, replayed and failed executions): the
 * first lines {@code sand logs} shows, before the sandbox's output. Keeps the last {@value #LINES}
 * lines per app, in memory. Thread-safe; no method blocks.
 */
final class AppLog {
  static final int LINES = 200;

  private final Clock clock;
  private final Map<String, Deque<String>> notes = new ConcurrentHashMap<>();

  AppLog(Clock clock) {
    this.clock = clock;
  }

  /** Adds {@code line}, prefixed with the time, to the notes about {@code app}. */
  void note(String app, String line) {
    Deque<String> log = notes.computeIfAbsent(app, k -> new ArrayDeque<>());
    synchronized (log) {
      log.addLast(Instant.now(clock) + " " + line);
      while (log.size() > LINES) {
        log.removeFirst();
      }
    }
  }

  /** The notes about {@code app}, oldest first. */
  List<String> lines(String app) {
    Deque<String> log = notes.get(app);
    if (log == null) {
      return List.of();
    }
    synchronized (log) {
      return List.copyOf(log);
    }
  }

  /**
   * The agent's notes about {@code app}'s deployed version, then the last {@code tail} lines of its
   * sandbox's output (grain workers' logs, tracebacks). Blocking (asks the runtime).
   */
  String withOutput(DeployedApp app, int tail) {
    StringBuilder out = new StringBuilder();
    for (String line : lines(app.name())) {
      out.append("[agent] ").append(line).append('\n');
    }
    try {
      out.append(app.runtime().logs(app.sandbox(), tail));
    } catch (SandboxException e) {
      out.append("[agent] cannot read the sandbox's output: ").append(e.getMessage()).append('\n');
    }
    return out.toString();
  }
}
