package dev.sand.store.cassandra;

import java.util.List;

/**
 * SAND's Cassandra schema, built here and nowhere else. Statements are idempotent ({@code IF NOT
 * EXISTS}) so every host agent may run them at start-up. Execution rows, listing rows, history
 * events and names are written with the configured retention as their TTL (decision 0018).
 *
 * <table>
 *   <caption>Tables in the SAND keyspace</caption>
 *   <tr><th>table</th><th>key</th><th>holds</th></tr>
 *   <tr><td>{@code executions}</td><td>{@code execution_id}</td>
 *       <td>one row per execution: app, workflow, status, input/output (JSON text), error, cause,
 *       created_at, finished_at; name, started_at, redrive_count, history_count,
 *       history_truncated (issue 13), trigger (JSON, issue 23) — added to older keyspaces by
 *       {@code ALTER}</td></tr>
 *   <tr><td>{@code executions_by_app}</td>
 *       <td>{@code ((app, day), started_at DESC, execution_id DESC)}</td>
 *       <td>the listing of an application's executions per UTC day, newest first: workflow,
 *       status, name, trigger, finished_at, error, cause, redrive_count (see {@link
 *       ExecutionTable})</td></tr>
 *   <tr><td>{@code execution_history}</td><td>{@code ((execution_id), at_ms, message, idx)}</td>
 *       <td>the history events of an execution in order, as JSON text (see {@link
 *       HistoryTable})</td></tr>
 *   <tr><td>{@code execution_names}</td><td>{@code ((app, name))}</td>
 *       <td>the names of idempotent starts: execution_id, input_sha256, claimed_at</td></tr>
 *   <tr><td>{@code data}</td><td>{@code ((app), key)}</td>
 *       <td>the global data layer (decision 0012): value (blob), size, sha256, written_at per
 *       application key; one partition per application, keys in order</td></tr>
 *   <tr><td>{@code task_waits}</td><td>{@code token_hash}</td>
 *       <td>the wait of each task token (callbacks, decision 0033): app, execution_id, status,
 *       outcome, timeout_at, heartbeat_ms, beat_at, and the host and member of its timer (see
 *       {@link TaskWaits})</td></tr>
 *   <tr><td>{@code triggers}</td><td>{@code ((app), trigger)}</td>
 *       <td>whether each trigger is paused, and since when (decision 0034; see {@link
 *       TriggerTable})</td></tr>
 *   <tr><td>{@code trigger_firings}</td><td>{@code ((app, trigger), firing DESC)}</td>
 *       <td>each firing of a schedule: execution_id, owner (agent incarnation), claimed_at,
 *       published</td></tr>
 *   <tr><td>{@code users}, {@code tokens}, {@code token_hashes}, {@code app_owners}</td>
 *       <td>see {@link AccessTable}</td><td>identity (decision 0017)</td></tr>
 * </table>
 */
public final class CassandraSchema {
  public static final String EXECUTIONS = "executions";
  public static final String DATA = "data";
  public static final String APPS = "apps";
  public static final String EXECUTIONS_BY_APP = "executions_by_app";
  public static final String EXECUTION_HISTORY = "execution_history";
  public static final String EXECUTION_NAMES = "execution_names";
  public static final String TASK_WAITS = "task_waits";
  public static final String TRIGGERS = "triggers";
  public static final String TRIGGER_FIRINGS = "trigger_firings";

  private CassandraSchema() {}

  /**
   * The statements that create {@code keyspace} and its tables, in order.
   *
   * <p>SimpleStrategy with {@code replicationFactor} replicas: 1 on a single node, 3 on a
   * replicated cluster (decision 0042). Deployments that create the keyspace beforehand with their
   * own replication keep it: {@code IF NOT EXISTS} leaves it alone.
   *
   * @param keyspace a plain lower-case identifier (checked by {@code CassandraConfig})
   * @param replicationFactor at least 1 (checked by {@code CassandraConfig})
   */
  public static List<String> statements(String keyspace, int replicationFactor) {
    List<String> all = new java.util.ArrayList<>(tables(keyspace, replicationFactor));
    all.addAll(AccessTable.schema(keyspace));
    all.addAll(ExecutionTable.schema(keyspace));
    all.addAll(NameTable.schema(keyspace));
    all.addAll(TaskWaits.schema(keyspace));
    all.addAll(TriggerTable.schema(keyspace));
    return List.copyOf(all);
  }

  private static List<String> tables(String keyspace, int replicationFactor) {
    return List.of(
        "CREATE KEYSPACE IF NOT EXISTS "
            + keyspace
            + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': "
            + replicationFactor
            + "}",
        "CREATE TABLE IF NOT EXISTS "
            + keyspace
            + "."
            + EXECUTIONS
            + " (execution_id text PRIMARY KEY, app text, workflow text, status text,"
            + " input text, output text, error text, cause text,"
            + " created_at timestamp, finished_at timestamp)",
        "CREATE TABLE IF NOT EXISTS "
            + keyspace
            + "."
            + DATA
            + " (app text, key text, value blob, size int, sha256 blob, written_at timestamp,"
            + " PRIMARY KEY ((app), key))",
        // a keyspace made before the global data layer was written has the table without its
        // metadata; no-ops otherwise (one column per statement: the grammar takes one with IF
        // NOT EXISTS)
        addColumn(keyspace, DATA, "size int"),
        addColumn(keyspace, DATA, "sha256 blob"),
        addColumn(keyspace, DATA, "written_at timestamp"),
        // the deployed applications, so that every host brings them back after a restart
        "CREATE TABLE IF NOT EXISTS "
            + keyspace
            + "."
            + APPS
            + " (app text PRIMARY KEY, version int, archive blob, options text,"
            + " deployed_at timestamp)");
  }

  private static String addColumn(String keyspace, String table, String column) {
    return ExecutionTable.addColumn(keyspace, table, column);
  }
}
