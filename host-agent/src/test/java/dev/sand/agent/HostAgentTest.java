package dev.sand.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.config.ClusterConfig;
import dev.sand.service.JsonHttp;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(20)
class HostAgentTest {
  static final String CONFIG =
      """
      {"state_dir": "/abs/state", "host_id": "host-1",
       "redis": {"socket": "/abs/state/run/redis.sock"},
       "kafka": {"bootstrap": "127.0.0.1:1"},
       "cassandra": {"contact_point": "127.0.0.1:1", "datacenter": "dc1", "keyspace": "sand"},
       "docker": {"host": "unix:///abs/docker.sock", "enabled": false},
       "frontend": {"ports": [18081], "max_payload_kb": 256},
       "host_agent": {"port": 18090, "secret": "agent-secret"},
       "nginx": {"port": 18080}}
      """;
  static final Timing FAST =
      new Timing(
          Duration.ofMillis(5),
          Duration.ofMillis(20),
          Duration.ofMillis(300),
          Duration.ofMillis(20));

  private final HttpClient http = HttpClient.newHttpClient();
  private HostAgent agent;

  /** A dependency whose reachability the test switches; counts open attempts. */
  static final class Fake implements Dependency {
    final String name;
    final AtomicBoolean reachable;
    final AtomicInteger opens = new AtomicInteger();
    final AtomicBoolean closed = new AtomicBoolean();

    Fake(String name, boolean reachable) {
      this.name = name;
      this.reachable = new AtomicBoolean(reachable);
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public String open() {
      opens.incrementAndGet();
      return ping();
    }

    @Override
    public String ping() {
      if (!reachable.get()) {
        throw new IllegalStateException(name + " refused connection");
      }
      return name + " fine";
    }

    @Override
    public void close() {
      closed.set(true);
    }
  }

  private HostAgent start(Dependency... dependencies) {
    ClusterConfig config = ClusterConfig.parse(CONFIG);
    agent =
        HostAgent.create(
            config, new HostAgent.Wiring(0, List.of(dependencies), FAST, Clock.systemUTC()));
    agent.start();
    return agent;
  }

  private HttpResponse<String> get(String path) throws Exception {
    return get(path, "agent-secret");
  }

  private HttpResponse<String> get(String path, String secret) throws Exception {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + agent.port() + path));
    if (secret != null) {
      request.header("X-Sand-Internal", secret);
    }
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static JsonNode json(HttpResponse<String> response) throws Exception {
    return JsonHttp.MAPPER.readTree(response.body());
  }

  @AfterEach
  void stop() {
    if (agent != null) {
      agent.close();
    }
  }

  /** All dependencies up: 200 with each one's status, the host id, port and pid. */
  @Test
  void health_allReachable_returns200() throws Exception {
    start(new Fake("redis", true), new Fake("kafka", true));
    agent.awaitReady();

    HttpResponse<String> response = get("/health");

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("content-type")).hasValue("application/json");
    JsonNode body = json(response);
    assertThat(body.get("status").asText()).isEqualTo("ok");
    assertThat(body.get("service").asText()).isEqualTo("host-agent");
    assertThat(body.get("host_id").asText()).isEqualTo("host-1");
    assertThat(body.get("port").asInt()).isEqualTo(agent.port());
    assertThat(body.get("pid").asLong()).isEqualTo(ProcessHandle.current().pid());
    assertThat(body.at("/dependencies/redis/status").asText()).isEqualTo("ok");
    assertThat(body.at("/dependencies/kafka/detail").asText()).isEqualTo("kafka fine");
  }

  /** A dependency not reachable yet: 503 naming it, while the agent keeps retrying. */
  @Test
  void health_dependencyUnreachable_returns503NamingIt() throws Exception {
    Fake kafka = new Fake("kafka", false);
    start(new Fake("redis", true), kafka);

    HttpResponse<String> response = get("/health");

    assertThat(response.statusCode()).isEqualTo(503);
    JsonNode body = json(response);
    assertThat(body.get("status").asText()).isEqualTo("unavailable");
    assertThat(body.get("unavailable")).hasSize(1);
    assertThat(body.get("unavailable").get(0).asText()).isEqualTo("kafka");
    assertThat(body.get("error").asText()).startsWith("kafka ");
  }

  /** Services may come up in any order: a late dependency is picked up by the retries. */
  @Test
  void awaitReady_dependencyComesUpLate_succeeds() throws Exception {
    Fake cassandra = new Fake("cassandra", false);
    start(cassandra);
    Thread.sleep(50);
    cassandra.reachable.set(true);

    agent.awaitReady();

    assertThat(cassandra.opens.get()).isGreaterThan(1);
    assertThat(get("/health").statusCode()).isEqualTo(200);
  }

  /** A dependency unreachable past the deadline fails start-up with a message naming it. */
  @Test
  void awaitReady_dependencyNeverUp_throwsNamingIt() {
    start(new Fake("redis", true), new Fake("cassandra", false));

    assertThatThrownBy(agent::awaitReady)
        .isInstanceOf(StartupException.class)
        .hasMessageContaining("cassandra still unreachable")
        .hasMessageContaining("cassandra refused connection");
  }

  /** A dependency lost after start-up turns health to 503 and back once it returns. */
  @Test
  void health_dependencyLostThenBack_tracksIt() throws Exception {
    Fake redis = new Fake("redis", true);
    start(redis);
    agent.awaitReady();

    redis.reachable.set(false);
    Thread.sleep(100);
    HttpResponse<String> down = get("/health");
    redis.reachable.set(true);
    Thread.sleep(100);
    HttpResponse<String> up = get("/health");

    assertThat(down.statusCode()).isEqualTo(503);
    assertThat(json(down).at("/dependencies/redis/status").asText()).isEqualTo("down");
    assertThat(up.statusCode()).isEqualTo(200);
  }

  /** Docker switched off: health stays 200 and says so. */
  @Test
  void health_disabledDependency_isReportedAndHealthy() throws Exception {
    start(new Fake("redis", true), new Disabled("docker", "docker.enabled is false"));
    agent.awaitReady();

    JsonNode body = json(get("/health"));

    assertThat(body.get("status").asText()).isEqualTo("ok");
    assertThat(body.at("/dependencies/docker/status").asText()).isEqualTo("disabled");
    assertThat(body.at("/dependencies/docker/detail").asText())
        .isEqualTo("docker.enabled is false");
  }

  /** Unknown paths answer 404 as JSON. */
  @Test
  void unknownPath_returns404Json() throws Exception {
    start(new Fake("redis", true));

    for (String path : List.of("/nope", "/v1/appsx", "/internal/principalx", "/health/x")) {
      HttpResponse<String> response = get(path);

      assertThat(response.statusCode()).as(path).isEqualTo(404);
      assertThat(json(response).get("error").asText()).isEqualTo("no such path: " + path);
    }
  }

  /**
   * Only SAND's own services (holding the agents' secret) get answers; a caller without it, or with
   * a wrong one, or claiming to be a user without it, gets 401 everywhere but /health.
   */
  @Test
  void withoutTheSecret_everyPathButHealthAnswers401() throws Exception {
    start(new Fake("redis", true));

    for (String path :
        List.of("/v1/apps", "/v1/apps/x", "/v1/users", "/v1/executions/x", "/nope")) {
      for (String secret : java.util.Arrays.asList(null, "wrong", "", "agent-secreT")) {
        HttpResponse<String> response = get(path, secret);
        assertThat(response.statusCode()).as("%s with %s", path, secret).isEqualTo(401);
        assertThat(json(response).get("error").asText()).contains("X-Sand-Internal");
      }
    }
    HttpResponse<String> forged =
        http.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + agent.port() + "/v1/apps"))
                .header("X-Sand-User", "admin")
                .header("X-Sand-Role", "admin")
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(forged.statusCode()).isEqualTo(401);
    assertThat(get("/health", null).statusCode()).isEqualTo(200);
  }

  /** close() releases every dependency. */
  @Test
  void close_closesDependencies() {
    Fake redis = new Fake("redis", true);
    start(redis);
    agent.awaitReady();

    agent.close();
    agent = null;

    assertThat(redis.closed).isTrue();
  }
}
