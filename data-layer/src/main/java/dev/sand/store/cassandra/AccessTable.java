package dev.sand.store.cassandra;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DriverException;
import com.datastax.oss.driver.api.core.cql.BatchStatement;
import com.datastax.oss.driver.api.core.cql.DefaultBatchType;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import dev.sand.store.StoreException;
import dev.sand.store.TokenRecord;
import dev.sand.store.UserRecord;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Users, their tokens and who owns which application name (decision 0017), in three tables of
 * {@link CassandraSchema}: {@code users} by name, {@code tokens} by id with the SHA-256 of each
 * (the lookup of a presented token goes through {@code token_hashes}, keyed by that hash), and
 * {@code app_owners} by application name.
 *
 * <p>Claims that must not race (a user name, an application name) are lightweight transactions: two
 * agents deploying the same new name at once cannot both win it. Everything here is rare
 * (management calls, and a token's first use on a frontend, which caches it), so calls block.
 * Thread-safe.
 */
public final class AccessTable {
  private static final ConsistencyLevel CONSISTENCY = ConsistencyLevel.LOCAL_QUORUM;

  private final CqlSession session;
  private final String keyspace;
  private final String where;

  AccessTable(CqlSession session, String keyspace, String where) {
    this.session = session;
    this.keyspace = keyspace;
    this.where = where;
  }

  /** The user {@code name}, or empty. */
  public Optional<UserRecord> user(String name) {
    return Optional.ofNullable(
            query("SELECT name, role, created FROM " + table(USERS) + " WHERE name = ?", name)
                .one())
        .map(AccessTable::user);
  }

  /** Every user, by name. */
  public List<UserRecord> users() {
    List<UserRecord> users = new ArrayList<>();
    query("SELECT name, role, created FROM " + table(USERS)).forEach(row -> users.add(user(row)));
    users.sort(Comparator.comparing(UserRecord::name));
    return users;
  }

  /** Makes {@code user} unless one of that name exists; true when it was made. */
  public boolean createUser(UserRecord user) {
    return query(
            "INSERT INTO " + table(USERS) + " (name, role, created) VALUES (?, ?, ?) IF NOT EXISTS",
            user.name(),
            user.role(),
            user.created())
        .wasApplied();
  }

  /**
   * Removes {@code name} and every token of theirs (they stop working once the frontends drop them,
   * see decision 0017); returns how many tokens were removed. The names of apps the user owns stay
   * theirs.
   */
  public int deleteUser(String name) {
    List<TokenRecord> tokens = tokens(Optional.of(name));
    for (TokenRecord token : tokens) {
      revoke(token.id());
    }
    query("DELETE FROM " + table(USERS) + " WHERE name = ?", name);
    return tokens.size();
  }

  /** Stores a new token of {@code record.user()} whose SHA-256 is {@code hash}. */
  public void createToken(TokenRecord record, String hash) {
    BatchStatement both =
        BatchStatement.newInstance(
            DefaultBatchType.LOGGED,
            SimpleStatement.newInstance(
                "INSERT INTO "
                    + table(TOKENS)
                    + " (id, username, hash, label, created, expires) VALUES (?, ?, ?, ?, ?, ?)",
                record.id(),
                record.user(),
                hash,
                record.label(),
                record.created(),
                record.expires()),
            SimpleStatement.newInstance(
                "INSERT INTO "
                    + table(TOKEN_HASHES)
                    + " (hash, id, username, expires) VALUES (?, ?, ?, ?)",
                hash,
                record.id(),
                record.user(),
                record.expires()));
    run(both.setConsistencyLevel(CONSISTENCY));
  }

  /** The tokens of {@code user}, or of everyone when empty; newest first. */
  public List<TokenRecord> tokens(Optional<String> user) {
    List<TokenRecord> tokens = new ArrayList<>();
    // the table is small (tokens of people, not of requests) and listing is rare: a scan
    // filtered by user costs less than keeping an index of tokens per user in step
    String cql = "SELECT id, username, label, created, expires FROM " + table(TOKENS);
    ResultSet rows =
        user.isPresent()
            ? query(cql + " WHERE username = ? ALLOW FILTERING", user.get())
            : query(cql);
    rows.forEach(row -> tokens.add(token(row)));
    tokens.sort(Comparator.comparing(TokenRecord::created).reversed());
    return tokens;
  }

  /** The token {@code id}, or empty. */
  public Optional<TokenRecord> token(String id) {
    return Optional.ofNullable(
            query(
                    "SELECT id, username, label, created, expires FROM "
                        + table(TOKENS)
                        + " WHERE id = ?",
                    id)
                .one())
        .map(AccessTable::token);
  }

  /** Removes the token {@code id}; true when there was one. */
  public boolean revoke(String id) {
    Row row = query("SELECT hash FROM " + table(TOKENS) + " WHERE id = ?", id).one();
    if (row == null) {
      return false;
    }
    BatchStatement both =
        BatchStatement.newInstance(
            DefaultBatchType.LOGGED,
            SimpleStatement.newInstance("DELETE FROM " + table(TOKENS) + " WHERE id = ?", id),
            SimpleStatement.newInstance(
                "DELETE FROM " + table(TOKEN_HASHES) + " WHERE hash = ?", row.getString("hash")));
    run(both.setConsistencyLevel(CONSISTENCY));
    return true;
  }

  /**
   * The token whose SHA-256 is {@code hash} with its user, if both exist and the token has not
   * expired at {@code now}.
   */
  public Optional<Found> find(String hash, Instant now) {
    Row row =
        query("SELECT id, username, expires FROM " + table(TOKEN_HASHES) + " WHERE hash = ?", hash)
            .one();
    if (row == null) {
      return Optional.empty();
    }
    Instant expires = row.getInstant("expires");
    if (expires != null && !now.isBefore(expires)) {
      return Optional.empty();
    }
    return user(row.getString("username")).map(u -> new Found(row.getString("id"), u));
  }

  /** A valid token: its id and its user. */
  public record Found(String tokenId, UserRecord user) {}

  /** Who owns the application name {@code app}, or empty when nobody has claimed it. */
  public Optional<String> owner(String app) {
    return Optional.ofNullable(
            query("SELECT owner FROM " + table(APP_OWNERS) + " WHERE app = ?", app).one())
        .map(row -> row.getString("owner"));
  }

  /**
   * Every claimed application name and its owner. Reads the whole (small: one row per application
   * name ever deployed) table; for listings across applications (decision 0018).
   */
  public Map<String, String> owners() {
    Map<String, String> owners = new java.util.TreeMap<>();
    for (Row row : query("SELECT app, owner FROM " + table(APP_OWNERS))) {
      owners.put(row.getString("app"), row.getString("owner"));
    }
    return owners;
  }

  /**
   * Claims {@code app} for {@code user} unless someone already holds it; returns the owner after
   * the claim (the user, or whoever held it first). Application names are one namespace for all
   * users; a name stays its owner's after an undeploy, so nobody else can take it over (and see the
   * executions that ran under it).
   */
  public String claim(String app, String user) {
    Row row =
        query(
                "INSERT INTO "
                    + table(APP_OWNERS)
                    + " (app, owner, claimed) VALUES (?, ?, ?) IF NOT EXISTS",
                app,
                user,
                Instant.now())
            .one();
    if (row == null || row.getBoolean("[applied]")) {
      return user;
    }
    return row.getString("owner");
  }

  static final String USERS = "users";
  static final String TOKENS = "tokens";
  static final String TOKEN_HASHES = "token_hashes";
  static final String APP_OWNERS = "app_owners";

  /** The statements that make this class's tables in {@code keyspace}. */
  static List<String> schema(String keyspace) {
    return List.of(
        "CREATE TABLE IF NOT EXISTS "
            + keyspace
            + "."
            + USERS
            + " (name text PRIMARY KEY, role text, created timestamp)",
        "CREATE TABLE IF NOT EXISTS "
            + keyspace
            + "."
            + TOKENS
            + " (id text PRIMARY KEY, username text, hash text, label text, created timestamp,"
            + " expires timestamp)",
        "CREATE TABLE IF NOT EXISTS "
            + keyspace
            + "."
            + TOKEN_HASHES
            + " (hash text PRIMARY KEY, id text, username text, expires timestamp)",
        "CREATE TABLE IF NOT EXISTS "
            + keyspace
            + "."
            + APP_OWNERS
            + " (app text PRIMARY KEY, owner text, claimed timestamp)");
  }

  private String table(String name) {
    return keyspace + "." + name;
  }

  private static UserRecord user(Row row) {
    return new UserRecord(row.getString("name"), row.getString("role"), row.getInstant("created"));
  }

  private static TokenRecord token(Row row) {
    String label = row.getString("label");
    return new TokenRecord(
        row.getString("id"),
        row.getString("username"),
        label == null ? "" : label,
        row.getInstant("created"),
        row.getInstant("expires"));
  }

  private ResultSet query(String cql, Object... values) {
    return run(SimpleStatement.newInstance(cql, values).setConsistencyLevel(CONSISTENCY));
  }

  private ResultSet run(com.datastax.oss.driver.api.core.cql.Statement<?> statement) {
    try {
      return session.execute(statement);
    } catch (DriverException e) {
      throw new StoreException("cassandra at " + where + ": " + e.getMessage(), e);
    }
  }
}
