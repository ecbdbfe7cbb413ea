package dev.sand.agent.apps;

import dev.sand.bus.redis.LocalBusException;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.contracts.Keys;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.output.IntegerOutput;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import java.security.SecureRandom;
import java.util.HexFormat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Redis ACL user of each app ({@link Keys#redisUser}), which its grain workers log in as: the
 * app's own keys read-write ({@link Keys#appOwnedPatterns}), the shared queues write-only ({@link
 * Keys#appWriteOnlyPatterns}), no dangerous, admin or pub/sub commands. So one app can neither read
 * nor change another's events and data. Thread-safe; every method makes one Redis round trip.
 */
final class AppUsers {
  private static final Logger LOG = LoggerFactory.getLogger(AppUsers.class);
  private static final int PASSWORD_BYTES = 24;

  /** What a grain worker logs in with. */
  record Credentials(String user, String password) {
    @Override
    public String toString() {
      return "Credentials[user=" + user + "]"; // the password stays out of logs
    }
  }

  private final SecureRandom random = new SecureRandom();

  /**
   * Creates (or resets, with a new password) the user of {@code app}.
   *
   * @throws LocalBusException when Redis refuses or is unreachable
   */
  Credentials create(RedisLocalBus bus, String app) {
    String user = Keys.redisUser(app);
    byte[] seed = new byte[PASSWORD_BYTES];
    random.nextBytes(seed);
    String password = HexFormat.of().formatHex(seed);
    CommandArgs<byte[], byte[]> args =
        new CommandArgs<>(ByteArrayCodec.INSTANCE)
            .add("SETUSER")
            .add(user)
            .add("reset")
            .add("on")
            .add(">" + password)
            .add("resetchannels");
    for (String pattern : Keys.appOwnedPatterns(app)) {
      args.add("~" + pattern);
    }
    for (String pattern : Keys.appWriteOnlyPatterns()) {
      args.add("%W~" + pattern);
    }
    for (String pattern : Keys.appReadOnlyPatterns(app)) {
      args.add("%R~" + pattern);
    }
    args.add("+@all").add("-@dangerous").add("-@admin").add("-@pubsub");
    bus.call(
        "ACL SETUSER " + user,
        c -> c.dispatch(CommandType.ACL, new StatusOutput<>(ByteArrayCodec.INSTANCE), args));
    return new Credentials(user, password);
  }

  /** Deletes {@code user}; logs and goes on when Redis refuses (clean-up must not fail). */
  static void delete(RedisLocalBus bus, String user) {
    try {
      bus.call(
          "ACL DELUSER " + user,
          c ->
              c.dispatch(
                  CommandType.ACL,
                  new IntegerOutput<>(ByteArrayCodec.INSTANCE),
                  new CommandArgs<>(ByteArrayCodec.INSTANCE).add("DELUSER").add(user)));
    } catch (LocalBusException e) {
      LOG.atWarn()
          .addKeyValue("user", user)
          .addKeyValue("error", e.getMessage())
          .log("ACL DELUSER failed");
    }
  }
}
