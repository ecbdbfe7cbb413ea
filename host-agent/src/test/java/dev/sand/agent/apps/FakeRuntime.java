package dev.sand.agent.apps;

import dev.sand.sandbox.SandboxException;
import dev.sand.sandbox.SandboxId;
import dev.sand.sandbox.SandboxInfo;
import dev.sand.sandbox.SandboxRuntime;
import dev.sand.sandbox.SandboxSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** An in-memory sandbox runtime: sandboxes are states the test sets; counts starts. */
final class FakeRuntime implements SandboxRuntime {
  final Map<SandboxId, String> states = new ConcurrentHashMap<>();
  final List<SandboxId> started = new ArrayList<>();
  private int next;

  @Override
  public synchronized SandboxId create(SandboxSpec spec) {
    SandboxId id = new SandboxId("fake-" + spec.app() + "-" + ++next);
    states.put(id, "created");
    return id;
  }

  @Override
  public synchronized void start(SandboxId id) {
    if (!states.containsKey(id)) {
      throw new SandboxException("no sandbox " + id, null);
    }
    states.put(id, "running");
    started.add(id);
  }

  @Override
  public void stop(SandboxId id, Duration grace) {
    states.computeIfPresent(id, (k, v) -> "exited");
  }

  @Override
  public void remove(SandboxId id) {
    states.remove(id);
  }

  @Override
  public List<SandboxInfo> listOwned() {
    return states.entrySet().stream()
        .map(e -> new SandboxInfo(e.getKey(), "", e.getValue()))
        .toList();
  }

  @Override
  public String logs(SandboxId id, int tailLines) {
    return "";
  }

  @Override
  public String ping() {
    return "fake";
  }

  @Override
  public void close() {}
}
