package dev.sand.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.store.cassandra.CassandraSchema;
import org.junit.jupiter.api.Test;

class CassandraSchemaTest {
  /** The keyspace comes first, then the tables, all qualified with the configured keyspace. */
  @Test
  void statements_createKeyspaceThenTables() {
    assertThat(CassandraSchema.statements("sandx", 1))
        .hasSize(24)
        .satisfiesExactly(
            ks -> assertThat(ks).startsWith("CREATE KEYSPACE IF NOT EXISTS sandx "),
            executions ->
                assertThat(executions)
                    .startsWith("CREATE TABLE IF NOT EXISTS sandx.executions ")
                    .contains("execution_id text PRIMARY KEY"),
            data ->
                assertThat(data)
                    .startsWith("CREATE TABLE IF NOT EXISTS sandx.data ")
                    .contains("PRIMARY KEY ((app), key)", "size int", "sha256 blob"),
            size -> assertThat(size).isEqualTo("ALTER TABLE sandx.data ADD IF NOT EXISTS size int"),
            sha ->
                assertThat(sha).isEqualTo("ALTER TABLE sandx.data ADD IF NOT EXISTS sha256 blob"),
            at ->
                assertThat(at)
                    .isEqualTo("ALTER TABLE sandx.data ADD IF NOT EXISTS written_at timestamp"),
            apps ->
                assertThat(apps)
                    .startsWith("CREATE TABLE IF NOT EXISTS sandx.apps ")
                    .contains("app text PRIMARY KEY", "archive blob"),
            users ->
                assertThat(users)
                    .startsWith("CREATE TABLE IF NOT EXISTS sandx.users ")
                    .contains("name text PRIMARY KEY", "role text"),
            tokens ->
                assertThat(tokens)
                    .startsWith("CREATE TABLE IF NOT EXISTS sandx.tokens ")
                    .contains("id text PRIMARY KEY", "hash text")
                    // only the hash of a token is ever stored
                    .doesNotContain("token text"),
            hashes ->
                assertThat(hashes)
                    .startsWith("CREATE TABLE IF NOT EXISTS sandx.token_hashes ")
                    .contains("hash text PRIMARY KEY"),
            owners ->
                assertThat(owners)
                    .startsWith("CREATE TABLE IF NOT EXISTS sandx.app_owners ")
                    .contains("app text PRIMARY KEY", "owner text"),
            // keyspaces made before issue 13 get the new columns of executions
            name ->
                assertThat(name)
                    .isEqualTo("ALTER TABLE sandx.executions ADD IF NOT EXISTS name text"),
            started ->
                assertThat(started)
                    .isEqualTo(
                        "ALTER TABLE sandx.executions ADD IF NOT EXISTS started_at timestamp"),
            redrives ->
                assertThat(redrives)
                    .isEqualTo("ALTER TABLE sandx.executions ADD IF NOT EXISTS redrive_count int"),
            count ->
                assertThat(count)
                    .isEqualTo("ALTER TABLE sandx.executions ADD IF NOT EXISTS history_count int"),
            truncated ->
                assertThat(truncated)
                    .isEqualTo(
                        "ALTER TABLE sandx.executions ADD IF NOT EXISTS history_truncated boolean"),
            // and those made before issue 23 the trigger that started an execution
            trigger ->
                assertThat(trigger)
                    .isEqualTo("ALTER TABLE sandx.executions ADD IF NOT EXISTS trigger text"),
            listing ->
                assertThat(listing)
                    .startsWith("CREATE TABLE IF NOT EXISTS sandx.executions_by_app ")
                    // one partition per app and day, newest first: no ALLOW FILTERING to list
                    .contains(
                        "PRIMARY KEY ((app, day), started_at, execution_id)",
                        "CLUSTERING ORDER BY (started_at DESC, execution_id DESC)",
                        "trigger text"),
            listingTrigger ->
                assertThat(listingTrigger)
                    .isEqualTo(
                        "ALTER TABLE sandx.executions_by_app ADD IF NOT EXISTS trigger text"),
            history ->
                assertThat(history)
                    .startsWith("CREATE TABLE IF NOT EXISTS sandx.execution_history ")
                    .contains("PRIMARY KEY ((execution_id), at_ms, message, idx)"),
            names ->
                assertThat(names)
                    .startsWith("CREATE TABLE IF NOT EXISTS sandx.execution_names ")
                    .contains("PRIMARY KEY ((app, name))", "input_sha256 text"),
            waits ->
                assertThat(waits)
                    .startsWith("CREATE TABLE IF NOT EXISTS sandx.task_waits ")
                    // a token is found by its hash only; the timer's exact bytes are kept
                    .contains(
                        "token_hash text PRIMARY KEY",
                        "status text",
                        "outcome text",
                        "timeout_at bigint",
                        "heartbeat_ms bigint",
                        "beat_at bigint",
                        "host text",
                        "member blob"),
            // decision 0034 (see TriggerTable)
            triggers ->
                assertThat(triggers).startsWith("CREATE TABLE IF NOT EXISTS sandx.triggers "),
            firings ->
                assertThat(firings)
                    .startsWith("CREATE TABLE IF NOT EXISTS sandx.trigger_firings "));
  }

  /** A replicated cluster's keyspace keeps as many replicas as its configuration asks. */
  @Test
  void statements_keyspaceHasTheReplicationFactorAsked() {
    assertThat(CassandraSchema.statements("sandx", 3).get(0))
        .isEqualTo(
            "CREATE KEYSPACE IF NOT EXISTS sandx WITH replication = "
                + "{'class': 'SimpleStrategy', 'replication_factor': 3}");
    assertThat(CassandraSchema.statements("sandx", 1).get(0)).endsWith("'replication_factor': 1}");
  }
}
