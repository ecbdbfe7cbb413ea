package dev.sand.agent;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.agent.apps.DeployException;
import dev.sand.contracts.Caller;
import dev.sand.store.StoreException;
import dev.sand.store.cassandra.AccessTable;
import dev.sand.store.cassandra.CassandraStore;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Who may see and act on which application (decision 0017): the user who first deployed a name owns
 * it, for good; admins act on every app. Another user's app is answered exactly as a missing one,
 * so names do not leak, except to a deploy of a taken name, which must be told to choose another.
 */
final class Ownership {
  private final Supplier<CassandraStore> cassandra;

  Ownership(Supplier<CassandraStore> cassandra) {
    this.cassandra = cassandra;
  }

  /** The owner named in an app's metadata ({@code owner}), or empty when it has none. */
  static Optional<String> ownerIn(JsonNode metadata) {
    JsonNode owner = metadata.path("owner");
    return owner.isTextual() ? Optional.of(owner.asText()) : Optional.empty();
  }

  /**
   * The owner of {@code app} on record, or empty when nobody claimed it.
   *
   * @throws DeployException (UNAVAILABLE) when the global data layer cannot answer
   */
  Optional<String> owner(String app) {
    try {
      return access().owner(app);
    } catch (StoreException e) {
      throw unavailable(e);
    }
  }

  /**
   * The owner to record for a deploy of {@code app} by {@code caller}: the caller, when the name is
   * free (it is claimed for them) or theirs; the present owner when an admin (or the system)
   * deploys someone's app.
   *
   * @throws DeployException (CONFLICT) when a user deploys a name another user holds
   */
  Optional<String> claim(String app, Caller caller) {
    try {
      if (caller.user() == null) {
        return access().owner(app);
      }
      String owner = access().claim(app, caller.user());
      if (!owner.equals(caller.user()) && !caller.admin()) {
        throw new DeployException(
            DeployException.Reason.CONFLICT,
            "the application name '" + app + "' is taken; choose another");
      }
      return Optional.of(owner);
    } catch (StoreException e) {
      throw unavailable(e);
    }
  }

  private AccessTable access() {
    return access(cassandra);
  }

  /**
   * The users, tokens and owners of the global data layer.
   *
   * @throws DeployException (UNAVAILABLE) while Cassandra is not connected
   */
  static AccessTable access(Supplier<CassandraStore> cassandra) {
    CassandraStore store = cassandra.get();
    if (store == null) {
      throw new DeployException(
          DeployException.Reason.UNAVAILABLE, "the global data layer is not connected yet");
    }
    return store.access();
  }

  private static DeployException unavailable(StoreException e) {
    return new DeployException(
        DeployException.Reason.UNAVAILABLE,
        "application owners cannot be read now: " + e.getMessage());
  }
}
