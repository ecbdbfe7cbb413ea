package dev.sand.sandbox.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.command.CreateContainerCmd;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.exception.NotModifiedException;
import com.github.dockerjava.api.model.Bind;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.Container;
import com.github.dockerjava.api.model.Event;
import com.github.dockerjava.api.model.EventType;
import com.github.dockerjava.api.model.Frame;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.Version;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import com.github.dockerjava.transport.DockerHttpClient;
import dev.sand.contracts.Names;
import dev.sand.sandbox.Labels;
import dev.sand.sandbox.SandboxException;
import dev.sand.sandbox.SandboxExits;
import dev.sand.sandbox.SandboxId;
import dev.sand.sandbox.SandboxInfo;
import dev.sand.sandbox.SandboxRuntime;
import dev.sand.sandbox.SandboxSpec;
import java.io.Closeable;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Sandboxes as Docker containers, through the Engine API on a unix socket (or TCP).
 *
 * <p>Containers get {@code network_mode=none}: grains reach the local bus and data layer through
 * Redis's unix socket mounted into the sandbox, and SAND's dockerd runs without a bridge. Tenant
 * code is hostile (decision 0016): every container runs as its application's unprivileged user,
 * with every capability dropped, {@code no-new-privileges}, a read-only root file system and a
 * small {@code /tmp} (tmpfs, nosuid, nodev), under Docker's default seccomp profile (never turned
 * off here). Each gets the spec's CPU weight (as {@code CpuShares}, the process backend's
 * conversion), CPU quota and memory limit without swap (decision 0022). Thread-safe (docker-java's
 * client is).
 */
public final class DockerSandboxRuntime implements SandboxRuntime {
  private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(3);
  // image pulls are not done here, so no call should take long; logs can be large
  private static final Duration RESPONSE_TIMEOUT = Duration.ofSeconds(60);
  private static final long LOGS_TIMEOUT_S = 10;
  private static final String NO_NEW_PRIVILEGES = "no-new-privileges:true";

  // after the event stream ended (the engine restarted, or an idle stream hit the response
  // timeout): the next subscription
  private static final long EVENTS_RETRY_MS = 1000;

  private final URI host;
  private final String hostId;
  private final DockerHttpClient http;
  private final DockerClient client;
  private final SandboxExits exits;
  private final ScheduledExecutorService resubscribe;
  private final AtomicReference<Closeable> events = new AtomicReference<>();
  private volatile boolean closed;

  private DockerSandboxRuntime(
      URI host, String hostId, DockerHttpClient http, DockerClient client, SandboxExits exits) {
    this.host = host;
    this.hostId = hostId;
    this.http = http;
    this.client = client;
    this.exits = exits;
    this.resubscribe =
        Executors.newSingleThreadScheduledExecutor(
            task -> {
              Thread thread = new Thread(task, "docker-events-" + hostId);
              thread.setDaemon(true);
              return thread;
            });
  }

  /**
   * A runtime for the engine at {@code host} that owns containers labelled {@code hostId}, and
   * signals {@code exits} whenever one of them dies (the engine's event stream, subscribed now and
   * again whenever it ends; while the engine is unreachable, one try a second).
   */
  public static DockerSandboxRuntime create(URI host, String hostId, SandboxExits exits) {
    Names.requireHostId(hostId);
    DockerClientConfig config =
        DefaultDockerClientConfig.createDefaultConfigBuilder()
            .withDockerHost(host.toString())
            .build();
    DockerHttpClient http =
        new ApacheDockerHttpClient.Builder()
            .dockerHost(config.getDockerHost())
            .sslConfig(config.getSSLConfig())
            .maxConnections(16)
            .connectionTimeout(CONNECT_TIMEOUT)
            .responseTimeout(RESPONSE_TIMEOUT)
            .build();
    DockerSandboxRuntime runtime =
        new DockerSandboxRuntime(
            host, hostId, http, DockerClientImpl.getInstance(config, http), exits);
    runtime.watchExits();
    return runtime;
  }

  /** Subscribes to the {@code die} events of this host's containers; each one signals exits. */
  private void watchExits() {
    if (closed) {
      return;
    }
    ResultCallback.Adapter<Event> callback =
        new ResultCallback.Adapter<>() {
          @Override
          public void onNext(Event event) {
            exits.signal();
          }

          @Override
          public void onError(Throwable error) {
            // the stream is gone (engine away or idle past the response timeout), not a failure
            // of any sandbox: subscribe again; a death meanwhile is found by the signal below
            closeQuietly(this);
            resubscribeLater();
          }

          @Override
          public void onComplete() {
            closeQuietly(this);
            resubscribeLater();
          }
        };
    events.set(callback);
    try {
      client
          .eventsCmd()
          .withEventTypeFilter(EventType.CONTAINER)
          .withEventFilter("die")
          .withLabelFilter(Map.of(Labels.OWNER, hostId))
          .exec(callback);
    } catch (RuntimeException e) {
      resubscribeLater();
    }
  }

  private void resubscribeLater() {
    if (closed) {
      return;
    }
    exits.signal(); // a sandbox may have died while no stream was open
    try {
      resubscribe.schedule(this::watchExits, EVENTS_RETRY_MS, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      // closed meanwhile
    }
  }

  private static void closeQuietly(Closeable closeable) {
    try {
      closeable.close();
    } catch (IOException e) {
      // nothing to do: the stream is being dropped
    }
  }

  @Override
  public SandboxId create(SandboxSpec spec) {
    String name = Labels.sandboxName(hostId, spec.app());
    List<Bind> binds =
        spec.mounts().stream()
            .map(
                m ->
                    Bind.parse(
                        m.hostPath() + ":" + m.sandboxPath() + (m.readOnly() ? ":ro" : ":rw")))
            .toList();
    List<String> env =
        spec.env().entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).toList();
    return call(
        "create container " + name + " from image " + spec.image(),
        () -> {
          try (CreateContainerCmd cmd = client.createContainerCmd(spec.image())) {
            String id =
                cmd.withName(name)
                    .withLabels(Labels.of(hostId, spec.app()))
                    .withEnv(env)
                    .withCmd(spec.command())
                    .withUser(spec.user().toString())
                    .withHostConfig(
                        HostConfig.newHostConfig()
                            .withCapDrop(Capability.ALL)
                            .withSecurityOpts(List.of(NO_NEW_PRIVILEGES))
                            .withReadonlyRootfs(true)
                            .withTmpFs(Map.of("/tmp", tmpfsOptions(spec.tmpSizeMb())))
                            .withMemory(spec.memoryMb() * 1024L * 1024L)
                            // equal to the memory limit: no swap, as on the process backend
                            .withMemorySwap(spec.memoryMb() * 1024L * 1024L)
                            .withCpuShares((int) spec.cpuShares())
                            .withNanoCPUs((long) (spec.cpus() * 1e9))
                            .withPidsLimit((long) spec.pidsLimit())
                            .withInit(false)
                            .withBinds(binds)
                            .withNetworkMode("none"))
                    .exec()
                    .getId();
            return new SandboxId(id);
          }
        });
  }

  /**
   * The mount options of a sandbox's {@code /tmp}: world-writable with the sticky bit (the sandbox
   * user is not its owner), no setuid files or device nodes, at most {@code sizeMb} MiB (its pages
   * count against the container's memory limit).
   */
  static String tmpfsOptions(int sizeMb) {
    return "rw,nosuid,nodev,mode=1777,size=" + sizeMb + "m";
  }

  @Override
  public void start(SandboxId id) {
    call(
        "start container " + id,
        () -> {
          try {
            client.startContainerCmd(id.value()).exec();
          } catch (NotModifiedException alreadyRunning) {
            // starting a running container is a no-op for us
          }
          return null;
        });
  }

  @Override
  public void stop(SandboxId id, Duration grace) {
    call(
        "stop container " + id,
        () -> {
          try {
            client
                .stopContainerCmd(id.value())
                .withTimeout((int) Math.max(0, Math.min(Integer.MAX_VALUE, grace.toSeconds())))
                .exec();
          } catch (NotModifiedException alreadyStopped) {
            // stopping a stopped container is a no-op for us
          }
          return null;
        });
  }

  @Override
  public void remove(SandboxId id) {
    call(
        "remove container " + id,
        () -> {
          try {
            client.removeContainerCmd(id.value()).withForce(true).withRemoveVolumes(true).exec();
          } catch (NotFoundException alreadyGone) {
            // removal is idempotent: the goal state is reached
          }
          return null;
        });
  }

  @Override
  public List<SandboxInfo> listOwned() {
    return call(
        "list containers labelled " + Labels.OWNER + "=" + hostId,
        () -> {
          List<Container> containers =
              client
                  .listContainersCmd()
                  .withShowAll(true)
                  .withLabelFilter(Map.of(Labels.OWNER, hostId))
                  .exec();
          return containers.stream()
              .map(
                  c ->
                      new SandboxInfo(
                          new SandboxId(c.getId()),
                          c.getLabels() == null ? "" : c.getLabels().getOrDefault(Labels.APP, ""),
                          String.valueOf(c.getState())))
              .toList();
        });
  }

  @Override
  public String logs(SandboxId id, int tailLines) {
    return call(
        "read logs of container " + id,
        () -> {
          StringBuilder out = new StringBuilder();
          ResultCallback.Adapter<Frame> callback =
              new ResultCallback.Adapter<>() {
                @Override
                public void onNext(Frame frame) {
                  out.append(new String(frame.getPayload(), StandardCharsets.UTF_8));
                }
              };
          client
              .logContainerCmd(id.value())
              .withStdOut(true)
              .withStdErr(true)
              .withTail(tailLines)
              .exec(callback);
          if (!callback.awaitCompletion(LOGS_TIMEOUT_S, TimeUnit.SECONDS)) {
            callback.close();
            throw new SandboxException(
                "docker at "
                    + host
                    + ": logs of container "
                    + id
                    + " took over "
                    + LOGS_TIMEOUT_S
                    + " s",
                null);
          }
          return out.toString();
        });
  }

  @Override
  public String ping() {
    return call(
        "ping",
        () -> {
          client.pingCmd().exec();
          Version version = client.versionCmd().exec();
          return "docker " + version.getVersion() + " (api " + version.getApiVersion() + ")";
        });
  }

  @Override
  public void close() {
    closed = true;
    resubscribe.shutdownNow();
    Closeable stream = events.get();
    if (stream != null) {
      closeQuietly(stream);
    }
    try {
      client.close();
      http.close();
    } catch (IOException e) {
      throw new SandboxException("docker at " + host + ": close failed: " + e, e);
    }
  }

  /** A Docker call whose failures become {@link SandboxException}s naming the action. */
  private interface DockerCall<T> {
    T run() throws Exception;
  }

  private <T> T call(String action, DockerCall<T> docker) {
    try {
      return docker.run();
    } catch (SandboxException e) {
      throw e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SandboxException("docker at " + host + ": " + action + ": interrupted", e);
    } catch (Exception e) {
      throw new SandboxException("docker at " + host + ": " + action + ": " + describe(e), e);
    }
  }

  private static String describe(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root == e ? e.toString() : e + " (caused by " + root + ")";
  }
}
