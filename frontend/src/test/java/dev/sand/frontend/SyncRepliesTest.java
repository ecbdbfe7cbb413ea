package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.bus.EventCodec;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.Keys;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The reply dispatcher that hands results to waiting synchronous calls ({@link FrontendFixture}):
 * it drops replies nobody waits for, holds no thread per waiting call, and recovers after a Redis
 * outage.
 */
@Timeout(30)
class SyncRepliesTest extends FrontendFixture {
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
              HttpRequest.newBuilder(uri("/v1/apps/hello/invoke"))
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
}
