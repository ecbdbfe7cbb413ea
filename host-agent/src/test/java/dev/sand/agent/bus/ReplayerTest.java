package dev.sand.agent.bus;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.agent.apps.Executions;
import dev.sand.bus.redis.LocalRedis;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.Keys;
import dev.sand.contracts.ResultDocument;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

@Timeout(30)
class ReplayerTest {
  @RegisterExtension static final LocalRedis REDIS = new LocalRedis();

  private final RedisLocalBus bus = REDIS.bus();

  private final Map<String, EventMessage> inFlight = new ConcurrentHashMap<>();
  private final List<String> notes = new ArrayList<>();
  private final Replayer replayer =
      new Replayer(
          "host-1",
          inFlight,
          new Executions("host-1", Clock.systemUTC()),
          (app, line) -> notes.add(app + ": " + line));

  private EventMessage taken(String eventId, String app, int attempt) {
    EventMessage event =
        new EventMessage()
            .setKind(EventKind.INVOKE)
            .setFlag(EventFlag.PROCESSING)
            .setExecution_id("x" + eventId)
            .setEvent_id(eventId)
            .setApp(app)
            .setWorkflow("main")
            .setTarget_grain("resize")
            .setReply_to("")
            .setAttempt(attempt);
    inFlight.put(eventId, event);
    return event;
  }

  /** An event an instance had taken is queued again with the next attempt, and noted. */
  @Test
  void replay_takenEvent_isQueuedAgainWithNextAttempt() {
    taken("e1", "thumbs", 0);
    taken("e2", "other", 0);

    replayer.replay(bus, "thumbs");

    List<EventMessage> queued = REDIS.events(Keys.grain("thumbs", "resize"));
    assertThat(queued)
        .singleElement()
        .satisfies(
            e -> {
              assertThat(e.getEvent_id()).isEqualTo("e1");
              assertThat(e.getFlag()).isEqualTo(EventFlag.QUEUED);
              assertThat(e.getAttempt()).isEqualTo(1);
            });
    assertThat(inFlight.get("e1").getAttempt()).isEqualTo(1);
    assertThat(replayer.replayed()).isEqualTo(1);
    assertThat(notes).singleElement().asString().contains("attempt 2");
    assertThat(REDIS.events(Keys.grain("other", "resize"))).isEmpty();
  }

  /** An event still waiting in its queue was never taken: it is not pushed twice. */
  @Test
  void replay_eventStillQueued_isLeftAlone() {
    bus.push(Keys.grain("thumbs", "resize"), taken("e3", "thumbs", 0).deepCopy());

    replayer.replay(bus, "thumbs");

    assertThat(REDIS.events(Keys.grain("thumbs", "resize"))).hasSize(1);
    assertThat(replayer.replayed()).isZero();
  }

  /** After the last attempt the execution fails instead of being tried again. */
  @Test
  void replay_lastAttempt_failsTheExecution() {
    taken("e4", "thumbs", Replayer.MAX_ATTEMPTS - 1);

    replayer.replay(bus, "thumbs");

    assertThat(REDIS.events(Keys.grain("thumbs", "resize"))).isEmpty();
    assertThat(inFlight).doesNotContainKey("e4");
    ResultDocument doc = ResultDocument.parse(bus.get(Keys.result("xe4")).orElseThrow());
    assertThat(doc.error()).isEqualTo(Executions.RUNTIME_ERROR);
    assertThat(doc.cause()).contains("died while grain 'resize' handled this event, 3 times");
    assertThat(notes).singleElement().asString().contains("execution xe4 failed");
  }
}
