package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
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
import java.io.InputStream;
import java.io.OutputStream;
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
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The frontend against a real redis-server; the tests play the grain worker and the host agent.
 * Admission bounds are far above what a test queues (InvokeAdmissionTest tests them). There is no
 * Kafka here: the app is deployed with backups off, so invocations do not wait for the global bus
 * (the backup path runs against the real stack in tests/integration).
 */
@Timeout(30)
class FrontendTest {
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

  private static RedisServer redis;
  private static RedisLocalBus bus;

  private final HttpClient http = HttpClient.newHttpClient();
  private final List<AutoCloseable> cleanup = new ArrayList<>();
  private Frontend frontend;

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

  private Frontend start(int agentPort, int maxPayloadKb) {
    frontend =
        Frontend.create(config(redis.socket(), agentPort, maxPayloadKb), 0, FrontendTest::lookup);
    frontend.start();
    return frontend;
  }

  private Frontend start() throws Exception {
    return start(freePort(), 256);
  }

  private static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private HttpResponse<String> send(String method, String path, String body) throws Exception {
    return send(method, path, body, BEARER);
  }

  private HttpResponse<String> send(String method, String path, String body, String authorization)
      throws Exception {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + frontend.port() + path));
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

  private static JsonNode json(HttpResponse<String> response) throws Exception {
    return JsonHttp.MAPPER.readTree(response.body());
  }

  /** Takes one event from {@code queue}, waiting up to 5 s. */
  private static EventMessage take(String queue) {
    try (RedisLocalBus.Taker taker = bus.taker()) {
      Optional<byte[]> value = taker.take(queue, Duration.ofSeconds(5));
      assertThat(value).as("an event on " + queue).isPresent();
      return EventCodec.decode(value.get());
    }
  }

  /** Plays the entry grain: takes one INVOKE and replies with {@code output} to its reply_to. */
  private Thread worker(String grainQueue, String output, AtomicReference<EventMessage> seen) {
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
  private static void eventually(org.junit.jupiter.api.function.Executable check) throws Throwable {
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

  /** GET /health answers 200 with the service, its id, port, pid and Redis socket. */
  @Test
  void health_redisUp_returnsOkWithIdentity() throws Exception {
    start();

    HttpResponse<String> response = send("GET", "/health", null);

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("content-type")).hasValue("application/json");
    JsonNode body = json(response);
    assertThat(body.get("status").asText()).isEqualTo("ok");
    assertThat(body.get("service").asText()).isEqualTo("frontend");
    assertThat(body.get("frontend_id").asText()).isEqualTo("fe-" + frontend.port());
    assertThat(body.get("port").asInt()).isEqualTo(frontend.port());
    assertThat(body.get("pid").asLong()).isEqualTo(ProcessHandle.current().pid());
    assertThat(body.get("redis").asText()).isEqualTo(redis.socket().toString());
  }

  /** Start-up fails naming the socket when Redis is not there. */
  @Test
  void start_redisMissing_failsNamingSocket() {
    Frontend orphan = Frontend.create(config(Path.of("/nonexistent/r.sock"), 18090, 256), 0);

    assertThatThrownBy(orphan::start)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("/nonexistent/r.sock");
  }

  /** Unknown paths answer 404 with a JSON error naming the path. */
  @Test
  void unknownPath_returns404Json() throws Exception {
    start();

    HttpResponse<String> response = send("GET", "/apps/nope", null);

    assertThat(response.statusCode()).isEqualTo(404);
    assertThat(json(response).get("error").asText()).isEqualTo("no such path: /apps/nope");
  }

  /** Other methods on a known path answer 405 with Allow. */
  @Test
  void wrongMethod_returns405WithAllow() throws Exception {
    start();

    assertThat(send("POST", "/health", null).headers().firstValue("allow")).hasValue("GET, HEAD");
    HttpResponse<String> invoke = send("GET", "/v1/apps/hello/invoke", null);
    assertThat(invoke.statusCode()).isEqualTo(405);
    assertThat(invoke.headers().firstValue("allow")).hasValue("POST");
  }

  /** A synchronous invocation answers 200 with the output the entry grain's result carries. */
  @Test
  void invoke_sync_returnsWorkerOutput() throws Exception {
    start();
    AtomicReference<EventMessage> seen = new AtomicReference<>();
    Thread worker = worker(Keys.grain("hello", "upper"), "{\"text\": \"HI\"}", seen);

    HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke", "{\"text\": \"hi\"}");
    worker.join(5000);

    assertThat(response.statusCode()).isEqualTo(200);
    JsonNode body = json(response);
    assertThat(body.get("status").asText()).isEqualTo("SUCCEEDED");
    assertThat(body.get("output").get("text").asText()).isEqualTo("HI");
    String id = body.get("execution_id").asText();
    assertThat(id).matches("[0-9a-f]{32}");
    assertThat(response.headers().firstValue("x-sand-execution-id")).hasValue(id);
    EventMessage invoke = seen.get();
    assertThat(invoke.getKind()).isEqualTo(EventKind.INVOKE);
    assertThat(invoke.getFlag()).isEqualTo(EventFlag.QUEUED);
    assertThat(invoke.getExecution_id()).isEqualTo(id);
    assertThat(invoke.getEvent_id()).matches("[0-9a-f]{32}").isNotEqualTo(id);
    assertThat(invoke.getWorkflow()).isEqualTo("main");
    assertThat(invoke.getTarget_grain()).isEqualTo("upper");
    assertThat(invoke.getSource_grain()).isEmpty();
    assertThat(invoke.getReply_to()).isEqualTo(frontend.id());
    assertThat(invoke.getHost()).isEqualTo(HOST);
    assertThat(invoke.getAttempt()).isZero();
    assertThat(new String(invoke.getPayload(), StandardCharsets.UTF_8))
        .isEqualTo("{\"text\":\"hi\"}");
  }

  /** A failed execution still answers 200, with status FAILED, error and cause. */
  @Test
  void invoke_syncFailed_returns200WithErrorAndCause() throws Exception {
    start();
    Thread worker =
        new Thread(
            () -> {
              EventMessage invoke = take(Keys.grain("hello", "upper"));
              String doc =
                  "{\"execution_id\":\"%s\",\"status\":\"FAILED\",\"error\":\"Boom\",\"cause\":\"bad\"}"
                      .formatted(invoke.getExecution_id());
              bus.push(
                  Keys.reply(invoke.getReply_to()),
                  new EventMessage()
                      .setKind(EventKind.ERROR)
                      .setExecution_id(invoke.getExecution_id())
                      .setPayload(doc.getBytes(StandardCharsets.UTF_8)));
            });
    worker.setDaemon(true);
    worker.start();

    HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke?mode=sync", "{}");
    worker.join(5000);

    assertThat(response.statusCode()).isEqualTo(200);
    JsonNode body = json(response);
    assertThat(body.get("status").asText()).isEqualTo("FAILED");
    assertThat(body.get("error").asText()).isEqualTo("Boom");
    assertThat(body.get("cause").asText()).isEqualTo("bad");
  }

  /** A synchronous call without a result in time answers 202 RUNNING so the client can poll. */
  @Test
  void invoke_syncTimeout_returns202Running() throws Exception {
    start();

    HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke?timeout_s=1", "{}");

    assertThat(response.statusCode()).isEqualTo(202);
    assertThat(json(response).get("status").asText()).isEqualTo("RUNNING");
  }

  /**
   * An asynchronous invocation answers 202 at once; the execution reads RUNNING, then the final
   * document once stored.
   */
  @Test
  void invoke_async_returns202ThenExecutionShowsRunningThenResult() throws Exception {
    start();

    HttpResponse<String> response =
        send("POST", "/v1/apps/hello/invoke?mode=async&workflow=other", "[1, 2]");

    assertThat(response.statusCode()).isEqualTo(202);
    String id = json(response).get("execution_id").asText();
    assertThat(json(response).get("status").asText()).isEqualTo("RUNNING");
    EventMessage invoke = take(Keys.grain("hello", "greet"));
    assertThat(invoke.getReply_to()).isEmpty();
    assertThat(invoke.getWorkflow()).isEqualTo("other");

    JsonNode running = json(send("GET", "/v1/executions/" + id, null));
    assertThat(running.get("status").asText()).isEqualTo("RUNNING");
    assertThat(running.get("execution_id").asText()).isEqualTo(id);
    assertThat(running.get("app").asText()).isEqualTo("hello");
    assertThat(running.get("workflow").asText()).isEqualTo("other");
    assertThat(running.get("started_ms").asLong()).isPositive();
    long ttlMs = bus.call("PTTL", c -> c.pttl(Keys.result(id).getBytes(StandardCharsets.UTF_8)));
    assertThat(ttlMs).isBetween(Duration.ofMinutes(59).toMillis(), Duration.ofHours(1).toMillis());

    String done =
        "{\"execution_id\":\"" + id + "\",\"app\":\"hello\",\"status\":\"SUCCEEDED\",\"output\":3}";
    bus.set(Keys.result(id), done.getBytes(StandardCharsets.UTF_8), Duration.ofHours(1));
    HttpResponse<String> finished = send("GET", "/v1/executions/" + id, null);
    assertThat(finished.statusCode()).isEqualTo(200);
    assertThat(json(finished).get("output").asInt()).isEqualTo(3);
  }

  /**
   * With backups on, a synchronous call puts the host agent's copy (flag PROCESSING) of the INVOKE
   * event on its queue, before the event (the agent publishes it with its other backups).
   */
  @Test
  void invoke_withBackups_pushesProcessingCopyToAgentQueue() throws Exception {
    start();
    bus.set(
        Keys.app("backed"),
        APP_DOC
            .replace("\"hello\"", "\"backed\"")
            .replace("\"backups\": false", "\"backups\": true")
            .getBytes(StandardCharsets.UTF_8),
        null);

    var call =
        http.sendAsync(
            HttpRequest.newBuilder(
                    URI.create(
                        "http://127.0.0.1:"
                            + frontend.port()
                            + "/v1/apps/backed/invoke?timeout_s=5"))
                .header("Authorization", BEARER)
                .POST(HttpRequest.BodyPublishers.ofString("{}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());

    EventMessage copy = take(Keys.agent(HOST));
    assertThat(copy.getFlag()).isEqualTo(EventFlag.PROCESSING);
    assertThat(copy.getKind()).isEqualTo(EventKind.INVOKE);
    EventMessage queued = take(Keys.grain("backed", "upper"));
    assertThat(queued.getEvent_id()).isEqualTo(copy.getEvent_id());
    assertThat(new String(queued.getPayload(), StandardCharsets.UTF_8)).isEqualTo("{}");
    call.cancel(true);
  }

  /**
   * With backups off, nothing goes to the agent's queue: no FINISHED flag would ever follow a copy,
   * and another run of the agent would take it for lost work.
   */
  @Test
  void invoke_withoutBackups_pushesNoCopy() throws Exception {
    start();

    String id =
        json(send("POST", "/v1/apps/hello/invoke?mode=async", "")).get("execution_id").asText();

    EventMessage queued = take(Keys.grain("hello", "upper"));
    assertThat(queued.getExecution_id()).isEqualTo(id);
    long copies = bus.call("LLEN", c -> c.llen(Keys.agent(HOST).getBytes(StandardCharsets.UTF_8)));
    assertThat(copies).isZero();
  }

  /** An application that is not deployed (or an invalid name) answers 404 naming it. */
  @Test
  void invoke_unknownApp_returns404() throws Exception {
    start();

    HttpResponse<String> unknown = send("POST", "/v1/apps/nope/invoke", "{}");
    HttpResponse<String> invalid = send("POST", "/v1/apps/Bad_Name/invoke", "{}");

    assertThat(unknown.statusCode()).isEqualTo(404);
    assertThat(json(unknown).get("error").asText()).isEqualTo("no application 'nope' is deployed");
    assertThat(invalid.statusCode()).isEqualTo(404);
    assertThat(json(invalid).get("error").asText()).contains("'Bad_Name'");
  }

  /** An unknown workflow answers 404 listing the application's workflows. */
  @Test
  void invoke_unknownWorkflow_returns404ListingWorkflows() throws Exception {
    start();

    HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke?workflow=nope", "{}");

    assertThat(response.statusCode()).isEqualTo(404);
    assertThat(json(response).get("error").asText())
        .isEqualTo("application 'hello' has no workflow 'nope' (workflows: main, other)");
  }

  /** Without ?workflow= and without a default workflow the call is refused with 400. */
  @Test
  void invoke_noWorkflowNoDefault_returns400() throws Exception {
    bus.set(
        Keys.app("nodefault"),
        "{\"name\":\"nodefault\",\"owner\":\"ada\",\"workflows\":{\"a\":{\"entry_grain\":\"g\"}}}"
            .getBytes(StandardCharsets.UTF_8),
        null);
    start();

    HttpResponse<String> response = send("POST", "/v1/apps/nodefault/invoke", "{}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(json(response).get("error").asText()).contains("no default workflow", "a");
  }

  /** A body over frontend.max_payload_kb answers 413 and queues nothing. */
  @Test
  void invoke_bodyOverLimit_returns413() throws Exception {
    start(freePort(), 1);
    String big = "\"" + "x".repeat(2000) + "\"";

    HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke", big);

    assertThat(response.statusCode()).isEqualTo(413);
    assertThat(json(response).get("error").asText()).contains("1024 bytes");
    long queued =
        bus.call(
            "LLEN", c -> c.llen(Keys.grain("hello", "upper").getBytes(StandardCharsets.UTF_8)));
    assertThat(queued).isZero();
  }

  /** A chunked body (no Content-Length) over the limit is also refused with 413. */
  @Test
  void invoke_chunkedBodyOverLimit_returns413() throws Exception {
    start(freePort(), 1);
    byte[] big = ("\"" + "x".repeat(5000) + "\"").getBytes(StandardCharsets.UTF_8);

    HttpResponse<String> response =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + frontend.port() + "/v1/apps/hello/invoke"))
                .header("Authorization", BEARER)
                .POST(
                    HttpRequest.BodyPublishers.ofInputStream(
                        () -> new java.io.ByteArrayInputStream(big)))
                .timeout(Duration.ofSeconds(20))
                .build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(response.statusCode()).isEqualTo(413);
  }

  /** A body that is not JSON answers 400 with Jackson's line and column. */
  @Test
  void invoke_badJson_returns400WithLocation() throws Exception {
    start();

    HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke", "{\"a\": \n nope}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(json(response).get("error").asText())
        .startsWith("request body is not JSON: ")
        .contains("line 2, column");
  }

  /**
   * An execution Redis does not hold is asked of the host agent (the records in Cassandra); with no
   * agent running, 503 names it.
   */
  @Test
  void execution_unknownWithoutAgent_returns503NamingTheAgent() throws Exception {
    start();

    HttpResponse<String> response = send("GET", "/v1/executions/abc123", null);

    assertThat(response.statusCode()).isEqualTo(503);
    assertThat(json(response).get("error").asText()).startsWith("host agent at 127.0.0.1:");
  }

  /** A reply for an execution nobody waits for is dropped; the dispatcher keeps serving. */
  @Test
  void reply_unknownExecution_isDroppedAndDispatcherContinues() throws Exception {
    start();
    bus.push(
        Keys.reply(frontend.id()),
        new EventMessage()
            .setKind(EventKind.RESULT)
            .setExecution_id("nobody")
            .setPayload(new byte[0]));
    bus.pushRaw(Keys.reply(frontend.id()), "not thrift".getBytes(StandardCharsets.UTF_8));
    AtomicReference<EventMessage> seen = new AtomicReference<>();
    Thread worker = worker(Keys.grain("hello", "upper"), "42", seen);

    HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke", "{}");
    worker.join(5000);

    assertThat(json(response).get("output").asInt()).isEqualTo(42);
  }

  /** The cluster view keeps the sandboxes of the caller's own apps; the agent gets the secret. */
  @Test
  void cluster_listsHostWithTheCallersSandboxesOnly() throws Exception {
    AtomicReference<String> secretSeen = new AtomicReference<>();
    HttpServer agent = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    agent.createContext(
        ClusterRoute.AGENT_PATH,
        exchange -> {
          secretSeen.set(exchange.getRequestHeaders().getFirst("X-Sand-Internal"));
          byte[] body =
              """
              {"host_id": "host-1", "sandboxes": [
                {"app": "hello", "owner": "ada", "backend": "process", "state": "running",
                 "workers": [{"grain": "upper", "healthy": true, "pid": 41}]},
                {"app": "secret", "owner": "carol", "backend": "docker", "state": "running",
                 "workers": []},
                {"app": "orphan", "owner": null, "backend": "docker", "state": "running",
                 "workers": []}]}
              """
                  .getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().set("Content-Type", "application/json");
          exchange.sendResponseHeaders(200, body.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
          }
        });
    agent.start();
    cleanup.add(() -> agent.stop(0));
    start(agent.getAddress().getPort(), 256);

    HttpResponse<String> ada = send("GET", "/v1/cluster", null);
    HttpResponse<String> bob = send("GET", "/v1/cluster", null, "Bearer " + BOB);

    assertThat(ada.statusCode()).isEqualTo(200);
    JsonNode host = json(ada).get("hosts").get(0);
    assertThat(host.get("host_id").asText()).isEqualTo(HOST);
    assertThat(host.get("healthy").asBoolean()).isTrue();
    assertThat(host.get("error").isNull()).isTrue();
    assertThat(host.get("sandboxes")).hasSize(1);
    assertThat(host.get("sandboxes").get(0).get("app").asText()).isEqualTo("hello");
    assertThat(host.get("sandboxes").get(0).get("workers").get(0).get("pid").asInt()).isEqualTo(41);
    assertThat(json(bob).get("hosts").get(0).get("sandboxes")).isEmpty();
    assertThat(secretSeen.get()).isEqualTo(SECRET);
  }

  /** A host whose agent does not answer is listed unhealthy, saying why. */
  @Test
  void cluster_agentAway_hostUnhealthyWithReason() throws Exception {
    start();

    HttpResponse<String> response = send("GET", "/v1/cluster", null);

    assertThat(response.statusCode()).isEqualTo(200);
    JsonNode host = json(response).get("hosts").get(0);
    assertThat(host.get("healthy").asBoolean()).isFalse();
    assertThat(host.get("error").asText())
        .startsWith("host agent at 127.0.0.1:")
        .contains("is not reachable");
    assertThat(host.get("sandboxes")).isEmpty();
  }

  /** / sends a browser to the GUI, without a token. */
  @Test
  void root_redirectsToTheGui() throws Exception {
    start();

    HttpResponse<String> response = send("GET", "/", null, null);

    assertThat(response.statusCode()).isEqualTo(302);
    assertThat(response.headers().firstValue("Location")).hasValue("/ui/");
  }

  /** Management calls are forwarded; NDJSON progress lines reach the client before the end. */
  @Test
  void deploy_proxiesToAgentAndStreamsNdjson() throws Exception {
    CountDownLatch firstLineSeen = new CountDownLatch(1);
    AtomicReference<String> received = new AtomicReference<>();
    HttpServer agent = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    agent.createContext(
        "/v1/apps",
        exchange -> {
          try (InputStream in = exchange.getRequestBody()) {
            received.set(
                exchange.getRequestMethod()
                    + " "
                    + exchange.getRequestURI()
                    + " "
                    + in.readAllBytes().length
                    + " "
                    + exchange.getRequestHeaders().getFirst("X-Sand-Internal")
                    + " "
                    + exchange.getRequestHeaders().getFirst("X-Sand-User")
                    + " "
                    + exchange.getRequestHeaders().getFirst("X-Sand-Role"));
          }
          exchange.getResponseHeaders().set("Content-Type", "application/x-ndjson");
          exchange.sendResponseHeaders(200, 0);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write("{\"status\":\"unpacking\"}\n".getBytes(StandardCharsets.UTF_8));
            out.flush();
            // the second line is written only after the client saw the first: proves streaming
            firstLineSeen.await(10, TimeUnit.SECONDS);
            out.write("{\"status\":\"deployed\",\"app\":{}}\n".getBytes(StandardCharsets.UTF_8));
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
    agent.start();
    cleanup.add(() -> agent.stop(0));
    start(agent.getAddress().getPort(), 256);
    byte[] tar = new byte[3 * 1024 * 1024];

    HttpResponse<java.util.stream.Stream<String>> response =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + frontend.port() + "/v1/apps?force=1"))
                .header("Authorization", BEARER)
                .POST(HttpRequest.BodyPublishers.ofByteArray(tar))
                .header("Content-Type", "application/x-tar")
                .timeout(Duration.ofSeconds(20))
                .build(),
            HttpResponse.BodyHandlers.ofLines());

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("content-type")).hasValue("application/x-ndjson");
    Iterator<String> lines = response.body().iterator();
    assertThat(lines.next()).isEqualTo("{\"status\":\"unpacking\"}");
    firstLineSeen.countDown();
    assertThat(lines.next()).isEqualTo("{\"status\":\"deployed\",\"app\":{}}");
    assertThat(lines.hasNext()).isFalse();
    // the agent learns the caller from the frontend, which proves it with the agents' secret
    assertThat(received.get())
        .isEqualTo("POST /v1/apps?force=1 " + tar.length + " " + SECRET + " ada user");
  }

  /** GET and DELETE on an application are forwarded with their status and body. */
  @Test
  void app_getAndDelete_forwardedWithStatus() throws Exception {
    HttpServer agent = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    agent.createContext(
        "/v1/apps/",
        exchange -> {
          byte[] body =
              ("{\"method\":\""
                      + exchange.getRequestMethod()
                      + "\",\"path\":\""
                      + exchange.getRequestURI()
                      + "\"}")
                  .getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().set("Content-Type", "application/json");
          exchange.sendResponseHeaders(
              "DELETE".equals(exchange.getRequestMethod()) ? 404 : 200, body.length);
          exchange.getResponseBody().write(body);
          exchange.close();
        });
    agent.start();
    cleanup.add(() -> agent.stop(0));
    start(agent.getAddress().getPort(), 256);

    HttpResponse<String> logs = send("GET", "/v1/apps/hello/logs?tail=5", null);
    HttpResponse<String> delete = send("DELETE", "/v1/apps/hello", null);

    assertThat(logs.statusCode()).isEqualTo(200);
    assertThat(json(logs).get("path").asText()).isEqualTo("/v1/apps/hello/logs?tail=5");
    assertThat(delete.statusCode()).isEqualTo(404);
    assertThat(json(delete).get("method").asText()).isEqualTo("DELETE");
  }

  /** When the host agent is down, management calls answer 503 naming its address. */
  @Test
  void apps_agentDown_returns503() throws Exception {
    int port = freePort();
    start(port, 256);

    HttpResponse<String> response = send("GET", "/v1/apps", null);

    assertThat(response.statusCode()).isEqualTo(503);
    assertThat(json(response).get("error").asText())
        .startsWith("host agent at 127.0.0.1:" + port + " is not reachable: ");
  }

  /**
   * Waiting synchronous calls hold no Jetty thread: 200 of them wait at once on a pool of 64
   * threads, and all get their results.
   */
  @Test
  void invoke_manyConcurrentSyncCalls_needNoThreadEach() throws Throwable {
    start();
    int calls = 200;
    List<java.util.concurrent.CompletableFuture<HttpResponse<String>>> responses =
        new ArrayList<>();
    for (int i = 0; i < calls; i++) {
      responses.add(
          http.sendAsync(
              HttpRequest.newBuilder(
                      URI.create("http://127.0.0.1:" + frontend.port() + "/v1/apps/hello/invoke"))
                  .header("Authorization", BEARER)
                  .POST(HttpRequest.BodyPublishers.ofString("{\"n\": " + i + "}"))
                  .timeout(Duration.ofSeconds(25))
                  .build(),
              HttpResponse.BodyHandlers.ofString()));
    }
    byte[] queue = Keys.grain("hello", "upper").getBytes(StandardCharsets.UTF_8);
    eventually(
        () -> {
          long queued = bus.call("LLEN", c -> c.llen(queue));
          assertThat(queued).isEqualTo(calls);
        });

    try (RedisLocalBus.Taker taker = bus.taker()) {
      for (int i = 0; i < calls; i++) {
        EventMessage invoke =
            EventCodec.decode(
                taker.take(Keys.grain("hello", "upper"), Duration.ofSeconds(5)).get());
        String doc =
            "{\"execution_id\":\"%s\",\"status\":\"SUCCEEDED\",\"output\":%s}"
                .formatted(
                    invoke.getExecution_id(),
                    new String(invoke.getPayload(), StandardCharsets.UTF_8));
        bus.push(
            Keys.reply(invoke.getReply_to()),
            new EventMessage()
                .setKind(EventKind.RESULT)
                .setExecution_id(invoke.getExecution_id())
                .setPayload(doc.getBytes(StandardCharsets.UTF_8)));
      }
    }

    for (int i = 0; i < calls; i++) {
      HttpResponse<String> response = responses.get(i).get(20, TimeUnit.SECONDS);
      assertThat(response.statusCode()).isEqualTo(200);
      assertThat(json(response).get("output").get("n").asInt()).isEqualTo(i);
    }
  }

  /**
   * While Redis is down /health answers 503 naming the socket; once it is back, health recovers and
   * the reply dispatcher serves synchronous calls again.
   */
  @Test
  void redisOutage_healthReports503_thenDispatcherRecovers() throws Throwable {
    start();

    redis.kill();
    try {
      HttpResponse<String> down = send("GET", "/health", null);
      assertThat(down.statusCode()).isEqualTo(503);
      assertThat(json(down).get("status").asText()).isEqualTo("unavailable");
      assertThat(json(down).get("redis").asText()).isEqualTo(redis.socket().toString());
      assertThat(json(down).get("error").asText()).contains(redis.socket().toString());
    } finally {
      redis.relaunch();
    }
    eventually(() -> bus.set(Keys.app("hello"), APP_DOC.getBytes(StandardCharsets.UTF_8), null));
    eventually(() -> assertThat(send("GET", "/health", null).statusCode()).isEqualTo(200));
    // let the app cache forget the outage-time reads
    Thread.sleep(AppCatalog.TTL.toMillis() + 100);

    AtomicReference<EventMessage> seen = new AtomicReference<>();
    Thread worker = worker(Keys.grain("hello", "upper"), "\"back\"", seen);
    HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke?timeout_s=15", "{}");
    worker.join(5000);

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(json(response).get("output").asText()).isEqualTo("back");
  }

  /** Without a token every /v1 route answers 401 with a challenge; /health needs none. */
  @Test
  void noToken_everyApiRouteAnswers401_healthStaysOpen() throws Exception {
    start();
    for (String[] call :
        new String[][] {
          {"POST", "/v1/apps/hello/invoke"},
          {"GET", "/v1/apps"},
          {"DELETE", "/v1/apps/hello"},
          {"GET", "/v1/executions/abc"},
          {"GET", "/v1/whoami"},
          {"POST", "/v1/tokens"}
        }) {
      HttpResponse<String> response = send(call[0], call[1], "{}", null);
      assertThat(response.statusCode()).as("%s %s", call[0], call[1]).isEqualTo(401);
      assertThat(response.headers().firstValue("www-authenticate"))
          .hasValue("Bearer realm=\"sand\"");
      assertThat(json(response).get("error").asText()).contains("Authorization: Bearer");
    }
    assertThat(send("GET", "/health", null, null).statusCode()).isEqualTo(200);
    // nothing reached the grain's queue
    assertThat(queued(Keys.grain("hello", "upper"))).isZero();
  }

  /** A malformed, unknown or non-bearer credential is refused the same way. */
  @Test
  void wrongToken_answers401() throws Exception {
    start();
    for (String authorization :
        List.of(
            "Bearer " + Tokens.generate(),
            "Bearer not-a-token",
            "Basic " + ADA,
            "Bearer " + ADA.substring(0, ADA.length() - 1))) {
      HttpResponse<String> response = send("POST", "/v1/apps/hello/invoke", "{}", authorization);
      assertThat(response.statusCode()).as(authorization).isEqualTo(401);
    }
    assertThat(queued(Keys.grain("hello", "upper"))).isZero();
  }

  /** Another user's app answers exactly as an app that does not exist, so names do not leak. */
  @Test
  void otherUsersApp_answersAsMissing() throws Exception {
    start();
    HttpResponse<String> theirs = send("POST", "/v1/apps/hello/invoke", "{}", "Bearer " + BOB);
    HttpResponse<String> missing = send("POST", "/v1/apps/nosuch/invoke", "{}", "Bearer " + BOB);

    assertThat(theirs.statusCode()).isEqualTo(404).isEqualTo(missing.statusCode());
    assertThat(json(theirs).get("error").asText())
        .isEqualTo(json(missing).get("error").asText().replace("nosuch", "hello"));
    // and so do its executions
    String doc =
        "{\"execution_id\":\"e1\",\"app\":\"hello\",\"status\":\"SUCCEEDED\",\"output\":1}";
    bus.set(Keys.result("e1"), doc.getBytes(StandardCharsets.UTF_8), Duration.ofMinutes(1));
    assertThat(send("GET", "/v1/executions/e1", null, "Bearer " + BOB).statusCode()).isEqualTo(404);
    assertThat(send("GET", "/v1/executions/e1", null).statusCode()).isEqualTo(200);
    assertThat(queued(Keys.grain("hello", "upper"))).isZero();
  }

  /**
   * A token is looked up once, then cached; a flush (with the agents' secret only) makes the next
   * request look it up again, which is how a revocation takes effect at once.
   */
  @Test
  void tokens_cachedUntilFlushed_flushNeedsTheSecret() throws Exception {
    start();
    LOOKUPS.clear();
    send("GET", "/v1/executions/abc", null, "Bearer " + BOB);
    send("GET", "/v1/executions/abd", null, "Bearer " + BOB);
    assertThat(LOOKUPS).containsExactly(Tokens.hash(BOB));

    HttpResponse<String> forged =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + frontend.port() + "/internal/auth/flush"))
                .header("X-Sand-Internal", "guess")
                .POST(HttpRequest.BodyPublishers.noBody())
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(forged.statusCode()).isEqualTo(401);
    send("GET", "/v1/executions/abc", null, "Bearer " + BOB);
    assertThat(LOOKUPS).hasSize(1);

    HttpResponse<String> flushed =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + frontend.port() + "/internal/auth/flush"))
                .header("X-Sand-Internal", SECRET)
                .POST(HttpRequest.BodyPublishers.noBody())
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(flushed.statusCode()).isEqualTo(200);
    send("GET", "/v1/executions/abc", null, "Bearer " + BOB);
    assertThat(LOOKUPS).hasSize(2);
  }

  private static long queued(String queue) {
    Long length = bus.call("LLEN", c -> c.llen(queue.getBytes(StandardCharsets.UTF_8)));
    return length;
  }
}
