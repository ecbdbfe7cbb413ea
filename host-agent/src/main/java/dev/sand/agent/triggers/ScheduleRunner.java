package dev.sand.agent.triggers;

import dev.sand.store.TriggerFiring;
import dev.sand.store.TriggerState;
import java.time.Instant;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fires schedules (decision 0034). Every agent that runs an app looks at its schedules once a
 * second; when a firing is due, each tries to claim it in Cassandra (a lightweight transaction),
 * and the one whose claim applies publishes its INVOKE event, then marks the claim published. So a
 * firing starts one execution however many hosts see it. A claim whose agent died before it
 * published is taken over after {@link #TAKE_OVER_AFTER_MS}, by a second transaction; the event is
 * published again with the same ids, which the partition's owner delivers once.
 *
 * <p>Missed firings (no host ran the app at the time): {@code run_once} starts one execution for
 * the latest, {@code skip} none; a firing more than {@link #LATE_MS} late counts as missed. Firings
 * while a trigger is paused are never run. Used by the triggers' thread only.
 */
final class ScheduleRunner {
  private static final Logger LOG = LoggerFactory.getLogger(ScheduleRunner.class);

  /** How late a firing may start and still count as on time. */
  static final long LATE_MS = 60_000;

  /** How old an unpublished claim must be before another agent takes it over. */
  static final long TAKE_OVER_AFTER_MS = Starts.DELIVERY_TIMEOUT_MS + 15_000;

  private static final DateTimeFormatter NAME_TIME =
      DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(java.time.ZoneOffset.UTC);

  /** The claims, as {@link dev.sand.store.cassandra.TriggerTable} keeps them. */
  interface Claims {
    Optional<TriggerFiring> last(String app, String trigger);

    /** Empty when this claim applied, else the claim that holds the firing. */
    Optional<TriggerFiring> claim(
        String app, String trigger, String firing, String executionId, String owner, long nowMs);

    boolean takeOver(String app, String trigger, TriggerFiring held, String owner, long nowMs);

    void published(String app, String trigger, String firing);
  }

  private final String incarnation;
  private final Claims claims;
  private final Starts starts;
  private final BiConsumer<TriggerDef, String> started;
  // per "app/trigger": the latest firing known to be started (or skipped) — Cassandra is asked
  // again only when a later one is due
  private final Map<String, Instant> done = new ConcurrentHashMap<>();
  private final Map<String, Instant> inFlight = new ConcurrentHashMap<>();

  /**
   * @param incarnation this run of the agent (a claim's owner)
   * @param started told of each execution this agent started ({@code (trigger, execution id)})
   */
  ScheduleRunner(
      String incarnation, Claims claims, Starts starts, BiConsumer<TriggerDef, String> started) {
    this.incarnation = incarnation;
    this.claims = claims;
    this.starts = starts;
    this.started = started;
  }

  /**
   * Looks at {@code def} at {@code nowMs}: claims and starts its due firing, if any.
   *
   * @param state whether it is paused, and since when
   * @param deployedAtMs when its app was deployed here (a new trigger runs nothing from before)
   */
  void tick(TriggerDef def, TriggerState state, long deployedAtMs, long nowMs) {
    if (state.paused()) {
      return;
    }
    Instant now = Instant.ofEpochMilli(nowMs);
    Optional<Instant> latest = def.schedule().latestAtOrBefore(now);
    if (latest.isEmpty()) {
      return;
    }
    Instant due = latest.get();
    String key = def.app() + "/" + def.name();
    Instant known = done.get(key);
    if ((known != null && !due.isAfter(known)) || due.equals(inFlight.get(key))) {
      return;
    }
    // firings from before a resume are never run; from before the deploy only if a firing of
    // this trigger was ever claimed (then the cluster was down, and `missed` decides)
    Optional<TriggerFiring> last = claims.last(def.app(), def.name());
    Instant floor = Instant.ofEpochMilli(state.changedAt());
    if (last.isPresent()) {
      Instant lastAt = Instant.parse(last.get().firing());
      if (lastAt.isAfter(floor)) {
        floor = lastAt;
      }
      if (lastAt.equals(due) && !last.get().published()) {
        finish(def, key, due, last.get(), nowMs);
        return;
      }
    } else if (deployedAtMs > floor.toEpochMilli()) {
      floor = Instant.ofEpochMilli(deployedAtMs);
    }
    if (!due.isAfter(floor)) {
      done.merge(key, floor, (a, b) -> a.isAfter(b) ? a : b);
      return;
    }
    if (nowMs - due.toEpochMilli() > LATE_MS && !TriggerDef.RUN_ONCE.equals(def.missed())) {
      LOG.atInfo()
          .addKeyValue("app", def.app())
          .addKeyValue("trigger", def.name())
          .addKeyValue("firing", due)
          .log("missed firing skipped (missed: skip)");
      done.put(key, due);
      return;
    }
    String firing = firingText(due);
    String executionId = Starts.newId();
    TriggerFiring claim =
        claims
            .claim(def.app(), def.name(), firing, executionId, incarnation, nowMs)
            .orElseGet(() -> new TriggerFiring(firing, executionId, incarnation, nowMs, false));
    finish(def, key, due, claim, nowMs);
  }

  /** Publishes a claim that is (or becomes) this agent's; marks a published one done. */
  private void finish(TriggerDef def, String key, Instant due, TriggerFiring claim, long nowMs) {
    if (claim.published()) {
      done.put(key, due);
      return;
    }
    if (!claim.owner().equals(incarnation)) {
      if (nowMs - claim.claimedAt() < TAKE_OVER_AFTER_MS
          || !claims.takeOver(def.app(), def.name(), claim, incarnation, nowMs)) {
        return; // its owner may still publish it; look again next tick
      }
      LOG.atWarn()
          .addKeyValue("app", def.app())
          .addKeyValue("trigger", def.name())
          .addKeyValue("firing", claim.firing())
          .addKeyValue("owner", claim.owner())
          .log("unpublished firing taken over");
    }
    inFlight.put(key, due);
    String firing = claim.firing();
    Map<String, Object> trigger = new LinkedHashMap<>();
    trigger.put("name", def.name());
    trigger.put("kind", "schedule");
    trigger.put("time", firing);
    starts
        .start(
            def,
            claim.executionId(),
            Starts.idOf(def.app(), def.name(), firing),
            def.name() + "-" + NAME_TIME.format(due),
            Starts.json(def.input()),
            trigger,
            nowMs)
        .orTimeout(Starts.DELIVERY_TIMEOUT_MS + 5_000L, TimeUnit.MILLISECONDS)
        .whenComplete(
            (ok, error) -> {
              inFlight.remove(key);
              if (error != null) {
                LOG.atWarn()
                    .addKeyValue("app", def.app())
                    .addKeyValue("trigger", def.name())
                    .addKeyValue("firing", firing)
                    .addKeyValue("error", error.toString())
                    .log("firing not published; trying again");
                return;
              }
              try {
                claims.published(def.app(), def.name(), firing);
                done.put(key, due);
                started.accept(def, claim.executionId());
              } catch (RuntimeException e) {
                // published but not marked: the next tick finds our own claim and publishes it
                // again with the same ids, which the partition's owner delivers once
                LOG.atWarn().addKeyValue("error", e.toString()).log("firing not marked published");
              }
            });
  }

  /** A firing time as the claims and the trigger header write it (UTC, seconds). */
  static String firingText(Instant at) {
    return at.truncatedTo(ChronoUnit.SECONDS).toString();
  }

  /** Forgets what is known of triggers no longer deployed here. */
  void retain(java.util.Set<String> keys) {
    done.keySet().retainAll(keys);
  }
}
