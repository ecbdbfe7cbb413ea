package dev.sand.agent.apps;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sand.bus.redis.LocalBusException;
import dev.sand.bus.redis.LocalRedis;
import dev.sand.bus.redis.RedisLocalBus;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

@Timeout(30)
class AppUsersTest {
  @RegisterExtension static final LocalRedis REDIS = new LocalRedis();

  private final RedisLocalBus admin = REDIS.bus();

  /** A connection logged in as {@code credentials}. */
  private static RedisLocalBus as(AppUsers.Credentials credentials) {
    RedisLocalBus bus = REDIS.connect();
    try {
      bus.call("AUTH", c -> c.auth(credentials.user(), credentials.password()));
      return bus;
    } catch (LocalBusException e) {
      bus.close();
      throw e;
    }
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  /** An app's user reads and writes its own keys, writes shared queues, reads nothing shared. */
  @Test
  void create_userOwnsItsKeysAndOnlyWritesSharedOnes() {
    AppUsers.Credentials thumbs = new AppUsers().create(admin, "thumbs");

    assertThat(thumbs.user()).isEqualTo("sand-app-thumbs");
    assertThat(thumbs.toString()).doesNotContain(thumbs.password());
    try (RedisLocalBus bus = as(thumbs)) {
      bus.set("sand:data:thumbs:global:k", bytes("v"), null);
      assertThat(bus.get("sand:data:thumbs:global:k")).isPresent();
      bus.set("sand:result:e1", bytes("{}"), null);
      assertThatThrownBy(() -> bus.get("sand:result:e1")).isInstanceOf(LocalBusException.class);
      assertThatThrownBy(() -> bus.set("sand:data:other:global:k", bytes("v"), null))
          .isInstanceOf(LocalBusException.class);
    }
  }

  /** A deleted user can no longer log in. */
  @Test
  void delete_userCannotLogInAnyMore() {
    AppUsers.Credentials crop = new AppUsers().create(admin, "crop");

    AppUsers.delete(admin, crop.user());

    assertThatThrownBy(() -> as(crop)).isInstanceOf(LocalBusException.class);
  }
}
