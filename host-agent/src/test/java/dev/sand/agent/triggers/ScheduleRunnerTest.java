package dev.sand.agent.triggers;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.bus.EventCodec;
import dev.sand.bus.thrift.EventMessage;
import dev.sand.contracts.contractsConstants;
import dev.sand.store.TriggerFiring;
import dev.sand.store.TriggerState;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** Several agents look at one schedule: each firing is claimed once and started once. */
class ScheduleRunnerTest {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final long MINUTE = 60_000;
  // 2026-11-27T10:00:00Z, a multiple of five minutes since the epoch
  private static final long T0 = Instant.parse("2026-11-27T10:00:00Z").toEpochMilli();

  /** Cassandra's claims as a lightweight transaction keeps them: first writer wins. */
  static final class FakeClaims implements ScheduleRunner.Claims {
    final Map<String, TriggerFiring> rows = new HashMap<>();

    @Override
    public synchronized Optional<TriggerFiring> last(String app, String trigger) {
      return rows.values().stream().max((a, b) -> a.firing().compareTo(b.firing()));
    }

    @Override
    public synchronized Optional<TriggerFiring> claim(
        String app, String trigger, String firing, String executionId, String owner, long nowMs) {
      TriggerFiring held = rows.get(firing);
      if (held != null) {
        return Optional.of(held);
      }
      rows.put(firing, new TriggerFiring(firing, executionId, owner, nowMs, false));
      return Optional.empty();
    }

    @Override
    public synchronized boolean takeOver(
        String app, String trigger, TriggerFiring held, String owner, long nowMs) {
      TriggerFiring now = rows.get(held.firing());
      if (now == null || now.published() || !now.owner().equals(held.owner())) {
        return false;
      }
      rows.put(
          held.firing(), new TriggerFiring(now.firing(), now.executionId(), owner, nowMs, false));
      return true;
    }

    @Override
    public synchronized void published(String app, String trigger, String firing) {
      TriggerFiring f = rows.get(firing);
      rows.put(
          firing, new TriggerFiring(f.firing(), f.executionId(), f.owner(), f.claimedAt(), true));
    }
  }

  /** The broker: records every event; can be made to fail or to hang. */
  static final class FakeBroker implements Starts.Publisher {
    final List<EventMessage> events = new ArrayList<>();
    boolean hang;

    @Override
    public synchronized CompletableFuture<Void> publish(String topic, String key, byte[] event) {
      if (hang) {
        return new CompletableFuture<>(); // the agent dies before the ack
      }
      EventMessage decoded = EventCodec.decode(event);
      events.add(decoded);
      assertThat(topic).isEqualTo("sand.reports.make");
      assertThat(key).isEqualTo(decoded.getExecution_id());
      return CompletableFuture.completedFuture(null);
    }

    @Override
    public void close() {}
  }

  private final FakeClaims claims = new FakeClaims();
  private final FakeBroker broker = new FakeBroker();

  private ScheduleRunner agent(String incarnation) {
    return new ScheduleRunner(incarnation, claims, new Starts("host-1", broker), (d, id) -> {});
  }

  private static TriggerDef every5Minutes(String missed) {
    ObjectNode input = MAPPER.createObjectNode().put("report", "daily");
    return new TriggerDef(
        "reports",
        "tick",
        "main",
        "make",
        Schedule.parse("rate(5 minutes)", "UTC"),
        missed,
        input,
        null,
        MAPPER.createObjectNode());
  }

  @Test
  void threeAgents_sameFiring_oneExecution_namedAndMarkedWithItsTrigger() throws Exception {
    TriggerDef def = every5Minutes("run_once");
    List<ScheduleRunner> agents = List.of(agent("a"), agent("b"), agent("c"));
    long deployed = T0 - 3 * MINUTE;
    for (long now = T0; now < T0 + 11 * MINUTE; now += 1000) {
      for (ScheduleRunner agent : agents) {
        agent.tick(def, TriggerState.ACTIVE, deployed, now);
      }
    }
    // 10:00, 10:05, 10:10: three firings, each started once
    assertThat(broker.events).hasSize(3);
    EventMessage first = broker.events.get(0);
    assertThat(first.getHeaders().get(contractsConstants.HEADER_NAME))
        .isEqualTo("tick-20261127T100000Z");
    assertThat(MAPPER.readTree(first.getHeaders().get(contractsConstants.HEADER_TRIGGER)))
        .isEqualTo(
            MAPPER.readTree(
                "{\"name\":\"tick\",\"kind\":\"schedule\",\"time\":\"2026-11-27T10:00:00Z\"}"));
    assertThat(new String(first.getPayload(), java.nio.charset.StandardCharsets.UTF_8))
        .isEqualTo("{\"report\":\"daily\"}");
    assertThat(first.getTarget_grain()).isEqualTo("make");
    assertThat(claims.rows.values()).allMatch(TriggerFiring::published);
    assertThat(claims.rows.keySet())
        .containsExactlyInAnyOrder(
            "2026-11-27T10:00:00Z", "2026-11-27T10:05:00Z", "2026-11-27T10:10:00Z");
  }

  @Test
  void newTrigger_runsNothingFromBeforeItsDeploy() {
    TriggerDef def = every5Minutes("run_once");
    ScheduleRunner agent = agent("a");
    agent.tick(def, TriggerState.ACTIVE, T0 + 1000, T0 + 2000);
    assertThat(broker.events).isEmpty();
    agent.tick(def, TriggerState.ACTIVE, T0 + 1000, T0 + 5 * MINUTE);
    assertThat(broker.events).hasSize(1);
  }

  @Test
  void clusterDownForAnHour_runOnce_startsOneForTheLatestMissed() {
    TriggerDef def = every5Minutes("run_once");
    agent("a").tick(def, TriggerState.ACTIVE, T0 - MINUTE, T0);
    assertThat(broker.events).hasSize(1);
    // everything stops; an hour later a new run of the agent is deployed anew
    long back = T0 + 62 * MINUTE;
    agent("a2").tick(def, TriggerState.ACTIVE, back - 1000, back);
    assertThat(broker.events).hasSize(2);
    assertThat(broker.events.get(1).getHeaders().get(contractsConstants.HEADER_NAME))
        .isEqualTo("tick-20261127T110000Z");
  }

  @Test
  void clusterDownForAnHour_skip_startsNoneUntilTheNextFiring() {
    TriggerDef def = every5Minutes("skip");
    agent("a").tick(def, TriggerState.ACTIVE, T0 - MINUTE, T0);
    ScheduleRunner back = agent("a2");
    back.tick(def, TriggerState.ACTIVE, T0, T0 + 62 * MINUTE);
    assertThat(broker.events).hasSize(1);
    back.tick(def, TriggerState.ACTIVE, T0, T0 + 65 * MINUTE);
    assertThat(broker.events).hasSize(2);
  }

  @Test
  void paused_startsNothing_andFiringsWhilePausedAreNotRunAfterTheResume() {
    TriggerDef def = every5Minutes("run_once");
    ScheduleRunner agent = agent("a");
    agent.tick(def, TriggerState.ACTIVE, T0 - MINUTE, T0);
    agent.tick(def, new TriggerState(true, T0 + MINUTE), T0 - MINUTE, T0 + 5 * MINUTE);
    assertThat(broker.events).hasSize(1);
    // resumed at 10:07: the 10:05 firing is not run, the 10:10 one is
    TriggerState resumed = new TriggerState(false, T0 + 7 * MINUTE);
    agent.tick(def, resumed, T0 - MINUTE, T0 + 7 * MINUTE);
    assertThat(broker.events).hasSize(1);
    agent.tick(def, resumed, T0 - MINUTE, T0 + 10 * MINUTE);
    assertThat(broker.events).hasSize(2);
  }

  @Test
  void claimantDiesBeforePublishing_anotherTakesOverAfterTheDelay_onceWithTheSameIds() {
    TriggerDef def = every5Minutes("run_once");
    broker.hang = true;
    agent("dead").tick(def, TriggerState.ACTIVE, T0 - MINUTE, T0);
    assertThat(claims.rows.get("2026-11-27T10:00:00Z").owner()).isEqualTo("dead");
    broker.hang = false;
    ScheduleRunner b = agent("b");
    ScheduleRunner c = agent("c");
    b.tick(def, TriggerState.ACTIVE, T0 - MINUTE, T0 + 1000);
    assertThat(broker.events).isEmpty(); // its owner may still publish
    long later = T0 + ScheduleRunner.TAKE_OVER_AFTER_MS + 1000;
    b.tick(def, TriggerState.ACTIVE, T0 - MINUTE, later);
    c.tick(def, TriggerState.ACTIVE, T0 - MINUTE, later + 1000);
    assertThat(broker.events).hasSize(1);
    TriggerFiring row = claims.rows.get("2026-11-27T10:00:00Z");
    assertThat(row.owner()).isEqualTo("b");
    assertThat(row.published()).isTrue();
    assertThat(broker.events.get(0).getExecution_id()).isEqualTo(row.executionId());
    assertThat(broker.events.get(0).getEvent_id())
        .isEqualTo(Starts.idOf("reports", "tick", "2026-11-27T10:00:00Z"));
  }
}
