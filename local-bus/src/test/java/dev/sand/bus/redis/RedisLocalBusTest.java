package dev.sand.bus.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.bus.thrift.EventMessage;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The order of a grain's queue on a real Redis: FIFO, and what is put first comes first. */
class RedisLocalBusTest {
  @RegisterExtension static final LocalRedis REDIS = new LocalRedis();
  private static final String QUEUE = "sand:queue:app:grain";

  private static EventMessage event(String id) {
    return new EventMessage().setEvent_id(id);
  }

  /** The ids in the order a consumer's BRPOP takes them. */
  private static List<String> takenOrder() {
    List<String> newestFirst = REDIS.events(QUEUE).stream().map(EventMessage::getEvent_id).toList();
    List<String> taken = new ArrayList<>(newestFirst);
    Collections.reverse(taken);
    return taken;
  }

  @Test
  void push_isFirstInFirstOut() {
    REDIS.bus().push(QUEUE, event("a"));
    REDIS.bus().push(QUEUE, event("b"));
    assertThat(takenOrder()).containsExactly("a", "b");
  }

  @Test
  void pushFirst_isTakenBeforeEverythingQueued() {
    REDIS.bus().push(QUEUE, event("new-1"));
    REDIS.bus().push(QUEUE, event("new-2"));
    REDIS.bus().pushFirst(QUEUE, event("replayed-1"));
    REDIS.bus().pushFirst(QUEUE, event("replayed-2"));
    assertThat(takenOrder()).containsExactly("replayed-2", "replayed-1", "new-1", "new-2");
  }
}
