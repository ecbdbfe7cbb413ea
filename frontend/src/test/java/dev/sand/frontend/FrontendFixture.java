package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import dev.sand.bus.EventCodec;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.redis.RedisServer;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.config.ClusterConfig;
import dev.sand.contracts.Caller;
import dev.sand.contracts.Keys;
import dev.sand.contracts.Tokens;
import dev.sand.service.JsonHttp;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/**
 * The frontend against a real redis-server; the tests play the grain worker and the host agent.
 * Admission bounds are far above what a test queues (InvokeAdmissionTest tests them). There is no
 * Kafka here: the app is deployed with backups off, so invocations do not wait for the global bus
 * (the backup path runs against the real stack in tests/integration).
 *
 * <p>Each test class that extends it has a redis-server of its own; before each test Redis is
 * emptied and the app {@code hello} of {@link #APP_DOC} deployed. A test starts the frontend with
 * {@link #start()} (or a fake host agent and the frontend with {@link #startWithAgent}); both are
 * stopped after it.
 */
abstract class FrontendFixture {
  static final String HOST = "host-1";
  // the tests' users: ada owns hello; bob owns nothing
  static final String ADA = Tokens.generate();
  static final String BOB = Tokens.generate();
  static final String BEARER = "Bearer " + ADA;
  static final String SECRET = "agents-secret";
  static final List<String> LOOKUPS = new java.util.concurrent.CopyOnWriteArrayList<>();

  static Optional<Caller> lookup(String hash) {
    LOOKUPS.add(hash);
    if (hash.equals(Tokens.hash(ADA))) {
      return Optional.of(Caller.of("ada", "user", "tok_ada"));
    }
    return hash.equals(Tokens.hash(BOB))
        ? Optional.of(Caller.of("bob", "user", "tok_bob"))
        : Optional.empty();
  }

  static final String APP_DOC =
      """
      {"name": "hello", "version": 3, "default_workflow": "main", "owner": "ada",
       "workflows": {"main": {"entry_grain": "upper"}, "other": {"entry_grain": "greet"}},
       "grains": ["upper", "greet"], "backups": false,
       "limits": {"timeout_s": 30, "memory_mb": 512, "max_concurrency": 64, "payload_kb": 256}}
      """;

  static RedisServer redis;
  static RedisLocalBus bus;

  final HttpClient http = HttpClient.newHttpClient();
  private final List<AutoCloseable> cleanup = new ArrayList<>();
  Frontend frontend;

  @BeforeAll
  static void startRedis() throws Exception {
    redis = RedisServer.start();
    bus = RedisLocalBus.connect(redis.socket(), Duration.ofSeconds(5));
  }

  @AfterAll
  static void stopRedis() throws Exception {
    bus.close();
    redis.close();
  }

  @BeforeEach
  void deployHello() {
    bus.call("FLUSHALL", c -> c.flushall());
    bus.set(Keys.app("hello"), APP_DOC.getBytes(StandardCharsets.UTF_8), null);
  }

  @AfterEach
  void stop() throws Exception {
    if (frontend != null) {
      frontend.close();
    }
    for (AutoCloseable c : cleanup) {
      c.close();
    }
  }

  static ClusterConfig config(Path socket, int agentPort, int maxPayloadKb) {
    return ClusterConfig.parse(
        """
        {"state_dir": "/abs/state", "host_id": "%s",
         "redis": {"socket": "%s"},
         "kafka": {"bootstrap": "127.0.0.1:1"},
         "cassandra": {"contact_point": "127.0.0.1:1", "datacenter": "dc1", "keyspace": "sand"},
         "docker": {"host": "unix:///abs/docker.sock", "enabled": false},
         "frontend": {"ports": [18081], "max_payload_kb": %d},
         "host_agent": {"port": %d, "secret": "%s"},
         "nginx": {"port": 18080},
         "admission": {"max_queued_per_app": 1000, "max_queued_per_host": 1000,
                       "retry_after_s": 1}}
        """
            .formatted(HOST, socket, maxPayloadKb, agentPort, SECRET));
  }

  Frontend start(int agentPort, int maxPayloadKb) {
    frontend =
        Frontend.create(
            config(redis.socket(), agentPort, maxPayloadKb), 0, FrontendFixture::lookup);
    frontend.start();
    return frontend;
  }

  Frontend start() throws Exception {
    return start(freePort(), 256);
  }

  /** Starts a fake host agent answering {@code context} with {@code handler}, then the frontend. */
  Frontend startWithAgent(String context, HttpHandler handler) throws Exception {
    HttpServer agent = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    agent.createContext(context, handler);
    agent.start();
    cleanup.add(() -> agent.stop(0));
    return start(agent.getAddress().getPort(), 256);
  }

  static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** {@code path} on the started frontend. */
  URI uri(String path) {
    return URI.create("http://127.0.0.1:" + frontend.port() + path);
  }

  HttpResponse<String> send(String method, String path, String body) throws Exception {
    return send(method, path, body, BEARER);
  }

  HttpResponse<String> send(String method, String path, String body, String authorization)
      throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(uri(path));
    if (authorization != null) {
      request.header("Authorization", authorization);
    }
    return http.send(
        request
            .method(
                method,
                body == null
                    ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofString(body))
            .timeout(Duration.ofSeconds(20))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  static JsonNode json(HttpResponse<String> response) throws Exception {
    return JsonHttp.MAPPER.readTree(response.body());
  }

  /** Takes one event from {@code queue}, waiting up to 5 s. */
  static EventMessage take(String queue) {
    try (RedisLocalBus.Taker taker = bus.taker()) {
      Optional<byte[]> value = taker.take(queue, Duration.ofSeconds(5));
      assertThat(value).as("an event on " + queue).isPresent();
      return EventCodec.decode(value.get());
    }
  }

  /** The number of events on {@code queue}. */
  static long queued(String queue) {
    Long length = bus.call("LLEN", c -> c.llen(queue.getBytes(StandardCharsets.UTF_8)));
    return length;
  }

  /** Plays the entry grain: takes one INVOKE and replies with {@code output} to its reply_to. */
  static Thread worker(String grainQueue, String output, AtomicReference<EventMessage> seen) {
    Thread worker =
        new Thread(
            () -> {
              EventMessage invoke = take(grainQueue);
              seen.set(invoke);
              String doc =
                  """
                  {"execution_id": "%s", "app": "%s", "workflow": "%s", "finished_ms": 1,
                   "status": "SUCCEEDED", "output": %s}
                  """
                      .formatted(
                          invoke.getExecution_id(), invoke.getApp(), invoke.getWorkflow(), output);
              bus.set(
                  Keys.result(invoke.getExecution_id()),
                  doc.getBytes(StandardCharsets.UTF_8),
                  Duration.ofHours(1));
              EventMessage result =
                  new EventMessage()
                      .setKind(EventKind.RESULT)
                      .setFlag(EventFlag.FINISHED)
                      .setExecution_id(invoke.getExecution_id())
                      .setEvent_id("e2")
                      .setApp(invoke.getApp())
                      .setWorkflow(invoke.getWorkflow())
                      .setPayload(doc.getBytes(StandardCharsets.UTF_8));
              bus.push(Keys.reply(invoke.getReply_to()), result);
            },
            "fake-worker");
    worker.setDaemon(true);
    worker.start();
    return worker;
  }

  /** Retries {@code check} until it passes or 15 s have gone. */
  static void eventually(org.junit.jupiter.api.function.Executable check) throws Throwable {
    long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
    while (true) {
      try {
        check.execute();
        return;
      } catch (Throwable e) {
        if (System.nanoTime() > deadline) {
          throw e;
        }
        Thread.sleep(100);
      }
    }
  }
}
