package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.redis.RedisServer;
import dev.sand.config.ClusterConfig;
import dev.sand.contracts.Caller;
import dev.sand.contracts.Keys;
import dev.sand.contracts.Tokens;
import dev.sand.service.JsonHttp;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Admission control (decision 0023) against two real redis-servers, two hosts of one cluster: an
 * invocation of an app whose queues on a host hold its bound is refused with 429 and Retry-After,
 * writing nothing, unless another host that runs the app has room. The app is deployed with backups
 * off (no Kafka here); the backed-up asynchronous path runs against the real stack in
 * tests/integration/test_admission.py.
 */
@Timeout(30)
class InvokeAdmissionTest {
  static final String TOKEN = Tokens.generate();
  static final int PER_APP = 3;

  static final String APP_DOC =
      """
      {"name": "hello", "version": 1, "default_workflow": "main", "owner": "ada",
       "workflows": {"main": {"entry_grain": "upper"}},
       "grains": ["upper", "greet"], "backups": false}
      """;

  private static RedisServer redis1;
  private static RedisServer redis2;
  private static RedisLocalBus bus1;
  private static RedisLocalBus bus2;

  private final HttpClient http = HttpClient.newHttpClient();
  private Frontend frontend;

  @BeforeAll
  static void startRedis() throws Exception {
    redis1 = RedisServer.start();
    redis2 = RedisServer.start();
    bus1 = RedisLocalBus.connect(redis1.socket(), Duration.ofSeconds(5));
    bus2 = RedisLocalBus.connect(redis2.socket(), Duration.ofSeconds(5));
  }

  @AfterAll
  static void stopRedis() throws Exception {
    bus1.close();
    bus2.close();
    redis1.close();
    redis2.close();
  }

  @BeforeEach
  void deploy() {
    for (RedisLocalBus bus : new RedisLocalBus[] {bus1, bus2}) {
      bus.call("FLUSHALL", c -> c.flushall());
    }
    bus1.set(Keys.app("hello"), APP_DOC.getBytes(StandardCharsets.UTF_8), null);
  }

  @AfterEach
  void stop() {
    if (frontend != null) {
      frontend.close();
    }
  }

  private void start() {
    String json =
        """
        {"state_dir": "/abs/state", "host_id": "host-1",
         "redis": {"socket": "%s"},
         "kafka": {"bootstrap": "127.0.0.1:1"},
         "cassandra": {"contact_point": "127.0.0.1:1", "datacenter": "dc1", "keyspace": "sand"},
         "docker": {"host": "unix:///abs/docker.sock", "enabled": false},
         "frontend": {"ports": [18081], "max_payload_kb": 64},
         "host_agent": {"port": 1, "secret": "s"},
         "nginx": {"port": 18080},
         "admission": {"max_queued_per_app": %d, "max_queued_per_host": 8, "retry_after_s": 2},
         "hosts": [{"id": "host-1", "redis_socket": "%s", "agent_url": "http://127.0.0.1:1"},
                   {"id": "host-2", "redis_socket": "%s", "agent_url": "http://127.0.0.1:1"}]}
        """
            .formatted(redis1.socket(), PER_APP, redis1.socket(), redis2.socket());
    frontend =
        Frontend.create(
            ClusterConfig.parse(json),
            0,
            hash ->
                hash.equals(Tokens.hash(TOKEN))
                    ? Optional.of(Caller.of("ada", "user", "tok_ada"))
                    : Optional.empty());
    frontend.start();
  }

  private HttpResponse<String> invoke(String query) throws Exception {
    return http.send(
        HttpRequest.newBuilder(
                URI.create(
                    "http://127.0.0.1:" + frontend.port() + "/v1/apps/hello/invoke?" + query))
            .header("Authorization", "Bearer " + TOKEN)
            .POST(HttpRequest.BodyPublishers.ofString("{\"n\": 1}"))
            .timeout(Duration.ofSeconds(20))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static void fill(RedisLocalBus bus, String grain, int events) {
    for (int i = 0; i < events; i++) {
      bus.pushRaw(Keys.grain("hello", grain), ("queued-" + i).getBytes(StandardCharsets.UTF_8));
    }
  }

  private static long queued(RedisLocalBus bus, String grain) {
    byte[] key = Keys.grain("hello", grain).getBytes(StandardCharsets.UTF_8);
    return bus.call("LLEN", c -> c.llen(key));
  }

  private static long keyCount(RedisLocalBus bus) {
    return bus.call("DBSIZE", c -> c.dbsize());
  }

  /**
   * With the app's queues at its bound, sync and async calls get 429, Retry-After and a body naming
   * the app and the bound, and nothing is written; once a grain took an event, a call is queued.
   */
  @Test
  void invoke_appAtItsBound_answers429AndQueuesNothing_thenAcceptsWhenThereIsRoom()
      throws Exception {
    start();
    fill(bus1, "upper", PER_APP);
    long keysBefore = keyCount(bus1);

    for (String mode : new String[] {"sync", "async"}) {
      HttpResponse<String> refused = invoke("mode=" + mode);

      assertThat(refused.statusCode()).as(mode).isEqualTo(429);
      assertThat(refused.headers().firstValue("Retry-After")).contains("2");
      JsonNode body = JsonHttp.MAPPER.readTree(refused.body());
      assertThat(body.get("retry_after_s").asInt()).isEqualTo(2);
      assertThat(body.get("error").asText())
          .contains("application 'hello' is at its bound on host 'host-1'")
          .contains("at most 3 per application (admission.max_queued_per_app)");
    }
    assertThat(queued(bus1, "upper")).isEqualTo(PER_APP);
    assertThat(keyCount(bus1)).as("no status document written").isEqualTo(keysBefore);

    bus1.call("RPOP", c -> c.rpop(Keys.grain("hello", "upper").getBytes(StandardCharsets.UTF_8)));
    HttpResponse<String> accepted = invoke("mode=async");

    assertThat(accepted.statusCode()).isEqualTo(202);
    assertThat(queued(bus1, "upper")).isEqualTo(PER_APP);
  }

  /**
   * The instances a grain's worker reports running count while its readiness key exists: a worker
   * takes events at once into instances forked ahead, so its queue alone says little.
   */
  @Test
  void invoke_instancesRunning_countWhileTheWorkerIsReady() throws Exception {
    start();
    bus1.call(
        "HSET",
        c ->
            c.hset(
                Keys.metrics("hello", "greet").getBytes(StandardCharsets.UTF_8),
                "in_flight".getBytes(StandardCharsets.UTF_8),
                Integer.toString(PER_APP).getBytes(StandardCharsets.UTF_8)));
    // no readiness key: a worker that died long ago reports nothing
    assertThat(invoke("mode=async").statusCode()).isEqualTo(202);
    bus1.set(
        Keys.ready("hello", "greet"),
        "42".getBytes(StandardCharsets.UTF_8),
        Duration.ofSeconds(10));

    HttpResponse<String> refused = invoke("mode=async");

    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.body()).contains(PER_APP + 1 + " of its events wait or run");
  }

  /** Events waiting for any grain of the app count, not only its entry grain's. */
  @Test
  void invoke_laterGrainsQueueFull_isRefusedToo() throws Exception {
    start();
    fill(bus1, "greet", PER_APP - 1);
    assertThat(invoke("mode=async").statusCode()).isEqualTo(202);

    HttpResponse<String> refused = invoke("mode=async");

    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(queued(bus1, "upper")).isEqualTo(1);
  }

  /**
   * A host at its bound passes the call to another host that runs the app; with both at their bound
   * the call is refused.
   */
  @Test
  void invoke_oneHostFull_anotherHostTakesIt_bothFull_refused() throws Exception {
    bus2.set(Keys.app("hello"), APP_DOC.getBytes(StandardCharsets.UTF_8), null);
    start();
    fill(bus1, "upper", PER_APP);

    for (int i = 0; i < PER_APP; i++) {
      assertThat(invoke("mode=async").statusCode()).isEqualTo(202);
    }
    assertThat(queued(bus2, "upper")).isEqualTo(PER_APP);
    assertThat(queued(bus1, "upper")).isEqualTo(PER_APP);

    HttpResponse<String> refused = invoke("mode=async");

    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.headers().firstValue("Retry-After")).contains("2");
  }

  /**
   * An invocation that must be backed up before it is queued (here: through Kafka) is checked
   * first, in the round trip that reads the agent's incarnation: refused before anything is
   * published.
   */
  @Test
  void invoke_viaKafka_atBound_refusedBeforeItIsPublished() throws Exception {
    start();
    fill(bus1, "upper", PER_APP);

    HttpResponse<String> refused = invoke("mode=async&via=kafka");

    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.body()).contains("admission.max_queued_per_app");
  }
}
