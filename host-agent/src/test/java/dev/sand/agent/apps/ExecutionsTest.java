package dev.sand.agent.apps;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.bus.redis.LocalRedis;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.Keys;
import dev.sand.contracts.ResultDocument;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

@Timeout(30)
class ExecutionsTest {
  private static final Instant NOW = Instant.parse("2026-01-02T03:04:05Z");
  @RegisterExtension static final LocalRedis REDIS = new LocalRedis();

  private final RedisLocalBus bus = REDIS.bus();

  private final Executions executions = new Executions("host-1", Clock.fixed(NOW, ZoneOffset.UTC));

  private static EventMessage event(String execution, String replyTo) {
    return new EventMessage()
        .setKind(EventKind.INVOKE)
        .setFlag(EventFlag.QUEUED)
        .setExecution_id(execution)
        .setEvent_id("ev-" + execution)
        .setApp("thumbs")
        .setWorkflow("main")
        .setTarget_grain("resize")
        .setReply_to(replyTo);
  }

  /** A failed execution gets its FAILED document, and the waiting caller an ERROR event. */
  @Test
  void fail_writesFailedDocumentAndAnswersSyncCaller() {
    executions.fail(bus, event("e1", "fe-1"), "States.Runtime", "the app went away");

    ResultDocument doc = ResultDocument.parse(bus.get(Keys.result("e1")).orElseThrow());
    assertThat(doc)
        .isEqualTo(
            ResultDocument.failed(
                "e1", "thumbs", "main", NOW.toEpochMilli(), "States.Runtime", "the app went away"));
    long ttl = bus.call("TTL", c -> c.ttl(Keys.result("e1").getBytes(StandardCharsets.UTF_8)));
    assertThat(ttl).isBetween(ResultDocument.TTL.toSeconds() - 5, ResultDocument.TTL.toSeconds());
    List<EventMessage> replies = REDIS.events(Keys.reply("fe-1"));
    assertThat(replies).hasSize(1);
    EventMessage reply = replies.get(0);
    assertThat(reply.getKind()).isEqualTo(EventKind.ERROR);
    assertThat(reply.getFlag()).isEqualTo(EventFlag.FAILED);
    assertThat(reply.getError()).isEqualTo("States.Runtime");
    assertThat(reply.getCause()).isEqualTo("the app went away");
    assertThat(reply.getHost()).isEqualTo("host-1");
    assertThat(ResultDocument.parse(reply.getPayload()).status()).isEqualTo(ExecutionStatus.FAILED);
    // the ERROR result, then (LPUSH: first in the list) the event's own FAILED flag, which
    // ends it on the global bus so that no host replays it
    assertThat(REDIS.events(Keys.agent("host-1")))
        .extracting(EventMessage::getKind, EventMessage::getFlag, EventMessage::getEvent_id)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple(EventKind.INVOKE, EventFlag.FAILED, "ev-e1"),
            org.assertj.core.groups.Tuple.tuple(
                EventKind.ERROR, EventFlag.FAILED, reply.getEvent_id()));
  }

  /** Without a synchronous caller, the ERROR event goes to the agent queue only. */
  @Test
  void fail_asyncExecution_pushesToAgentQueueOnly() {
    executions.fail(bus, event("e2", ""), "States.Runtime", "gone");

    assertThat(bus.get(Keys.result("e2"))).isPresent();
    assertThat(REDIS.events(Keys.agent("host-1"))).hasSize(2); // the ERROR result, the FAILED flag
    List<byte[]> replyQueues =
        bus.call("KEYS", c -> c.keys("sand:reply:*".getBytes(StandardCharsets.UTF_8)));
    assertThat(replyQueues).isEmpty();
  }

  /** Every execution waiting in the app's queues fails; an unreadable entry is skipped. */
  @Test
  void failQueued_failsEveryWaitingExecutionAndSkipsGarbage() {
    bus.push(Keys.grain("thumbs", "resize"), event("e3", ""));
    bus.push(Keys.grain("thumbs", "resize"), event("e4", ""));
    bus.pushRaw(Keys.grain("thumbs", "resize"), "not thrift".getBytes(StandardCharsets.UTF_8));

    int failed =
        executions.failQueued(bus, "thumbs", List.of("resize", "crop"), "thumbs was undeployed");

    assertThat(failed).isEqualTo(2);
    for (String id : List.of("e3", "e4")) {
      ResultDocument doc = ResultDocument.parse(bus.get(Keys.result(id)).orElseThrow());
      assertThat(doc.error()).isEqualTo(Executions.RUNTIME_ERROR);
      assertThat(doc.cause()).isEqualTo("thumbs was undeployed");
    }
  }
}
