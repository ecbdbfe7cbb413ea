package dev.sand.store.cassandra;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import dev.sand.store.TriggerFiring;
import dev.sand.store.TriggerState;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The triggers' state (decision 0034): {@code triggers} holds whether each trigger of an app is
 * paused; {@code trigger_firings} holds each firing of a schedule, claimed by the one agent that
 * starts its execution. A claim is a lightweight transaction ({@code IF NOT EXISTS}), so of every
 * agent that sees a firing due, exactly one claims it; the claimant marks it published once the
 * broker holds its INVOKE event, and a claim left unpublished (its agent died between the two) is
 * taken over by another agent, again through a transaction.
 *
 * <p>Firings expire after the retention of execution records. Blocking; throws {@link
 * dev.sand.store.StoreException} when Cassandra does not answer. Thread-safe.
 */
public final class TriggerTable {
  private final Statements statements;
  private final int retentionSeconds;

  TriggerTable(CqlSession session, String keyspace, String where, int retentionSeconds) {
    this.statements = new Statements(session, keyspace, where);
    this.retentionSeconds = retentionSeconds;
  }

  /** The state of every trigger of {@code app} that was ever paused or resumed, by name. */
  public Map<String, TriggerState> states(String app) {
    Map<String, TriggerState> states = new HashMap<>();
    for (Row row : statements.run(statements.prepare(STATES).bind(app))) {
      Instant changed = row.getInstant("changed_at");
      states.put(
          row.getString("trigger"),
          new TriggerState(row.getBoolean("paused"), changed == null ? 0 : changed.toEpochMilli()));
    }
    return states;
  }

  /** Pauses or resumes {@code trigger} of {@code app} as of {@code nowMs}. */
  public void setPaused(String app, String trigger, boolean paused, long nowMs) {
    statements.run(
        statements.prepare(SET_PAUSED).bind(paused, Instant.ofEpochMilli(nowMs), app, trigger));
  }

  /** The latest firing claimed of {@code trigger}, or empty (read at LOCAL_SERIAL). */
  public Optional<TriggerFiring> last(String app, String trigger) {
    Row row = statements.runSerial(statements.prepare(LAST).bind(app, trigger)).one();
    return Optional.ofNullable(row).map(TriggerTable::firing);
  }

  /**
   * Claims {@code firing} for {@code owner} and a new execution {@code executionId} unless someone
   * did. Returns empty when this claim applied, else the claim that holds it.
   */
  public Optional<TriggerFiring> claim(
      String app, String trigger, String firing, String executionId, String owner, long nowMs) {
    Row row =
        statements
            .run(
                serial(
                    statements
                        .prepare(CLAIM)
                        .bind(app, trigger, firing, executionId, owner, nowMs, retentionSeconds)))
            .one();
    if (row == null || row.getBoolean("[applied]")) {
      return Optional.empty();
    }
    return Optional.of(firing(row));
  }

  /**
   * Moves an unpublished claim from {@code held.owner()} to {@code owner}. Returns whether it
   * applied (false: its owner published it, or another agent took it over first).
   */
  public boolean takeOver(
      String app, String trigger, TriggerFiring held, String owner, long nowMs) {
    Row row =
        statements
            .run(
                serial(
                    statements
                        .prepare(TAKE_OVER)
                        .bind(
                            retentionSeconds,
                            owner,
                            nowMs,
                            app,
                            trigger,
                            held.firing(),
                            held.owner(),
                            false)))
            .one();
    return row == null || row.getBoolean("[applied]");
  }

  /** Marks {@code firing} published: its INVOKE event is on the broker. */
  public void published(String app, String trigger, String firing) {
    statements.run(
        serial(statements.prepare(PUBLISHED).bind(retentionSeconds, true, app, trigger, firing)));
  }

  private static TriggerFiring firing(Row row) {
    return new TriggerFiring(
        row.getString("firing"),
        row.getString("execution_id"),
        row.getString("owner"),
        row.getLong("claimed_at"),
        row.getBoolean("published"));
  }

  private static BoundStatement serial(BoundStatement statement) {
    return statement.setSerialConsistencyLevel(ConsistencyLevel.LOCAL_SERIAL);
  }

  // -- statements --------------------------------------------------------------------------------

  private static final String FIRING_COLUMNS = "firing, execution_id, owner, claimed_at, published";
  static final String STATES = "SELECT trigger, paused, changed_at FROM %s.triggers WHERE app = ?";
  static final String SET_PAUSED =
      "UPDATE %s.triggers SET paused = ?, changed_at = ? WHERE app = ? AND trigger = ?";
  static final String LAST =
      "SELECT "
          + FIRING_COLUMNS
          + " FROM %s.trigger_firings WHERE app = ? AND trigger = ? ORDER BY firing DESC LIMIT 1";
  static final String CLAIM =
      "INSERT INTO %s.trigger_firings (app, trigger, firing, execution_id, owner, claimed_at,"
          + " published) VALUES (?, ?, ?, ?, ?, ?, false) IF NOT EXISTS USING TTL ?";
  static final String TAKE_OVER =
      "UPDATE %s.trigger_firings USING TTL ? SET owner = ?, claimed_at = ? WHERE app = ? AND"
          + " trigger = ? AND firing = ? IF owner = ? AND published = ?";
  static final String PUBLISHED =
      "UPDATE %s.trigger_firings USING TTL ? SET published = ? WHERE app = ? AND trigger = ? AND"
          + " firing = ? IF EXISTS";

  /** The statements that make this class's tables in {@code keyspace}. */
  static List<String> schema(String keyspace) {
    return List.of(
        "CREATE TABLE IF NOT EXISTS "
            + keyspace
            + "."
            + CassandraSchema.TRIGGERS
            + " (app text, trigger text, paused boolean, changed_at timestamp,"
            + " PRIMARY KEY ((app), trigger))",
        "CREATE TABLE IF NOT EXISTS "
            + keyspace
            + "."
            + CassandraSchema.TRIGGER_FIRINGS
            + " (app text, trigger text, firing text, execution_id text, owner text,"
            + " claimed_at bigint, published boolean, PRIMARY KEY ((app, trigger), firing))"
            + " WITH CLUSTERING ORDER BY (firing DESC)");
  }
}
