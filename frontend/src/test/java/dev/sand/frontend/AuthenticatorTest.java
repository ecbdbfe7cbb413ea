package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sand.contracts.Caller;
import dev.sand.contracts.Tokens;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The token cache: TTLs, flushes, and known tokens through a data layer that is away. */
class AuthenticatorTest {
  private static final String TOKEN = Tokens.generate();
  private static final Caller ALICE = new Caller("alice", false, "tok_1");

  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  // what each lookup answers, in order: a caller, empty (unknown) or null (unavailable)
  private final Deque<Optional<Caller>> answers = new ArrayDeque<>();
  private int lookups;
  private final Authenticator auth =
      new Authenticator(
          hash -> {
            lookups++;
            Optional<Caller> next = answers.poll();
            if (next == null) {
              throw new Authenticator.Unavailable("tokens cannot be checked now: test");
            }
            return next;
          },
          now::get);

  private Caller call() throws Authenticator.Refused {
    return auth.authenticate("Bearer " + TOKEN);
  }

  private void after(Duration d) {
    now.addAndGet(d.toNanos());
  }

  @Test
  void knownToken_isLookedUpOnce_withinItsTtl() throws Exception {
    answers.add(Optional.of(ALICE));
    assertThat(call()).isEqualTo(ALICE);
    after(Authenticator.KNOWN_TTL.minusSeconds(1));
    assertThat(call()).isEqualTo(ALICE);
    assertThat(lookups).isEqualTo(1);
  }

  @Test
  void expiredKnownToken_whileLookupsAreUnavailable_isServedStale_thenRefused() throws Exception {
    answers.add(Optional.of(ALICE));
    call();
    after(Authenticator.KNOWN_TTL.plusSeconds(5)); // expired; the data layer is away
    assertThat(call()).isEqualTo(ALICE);
    after(Authenticator.STALE_IF_UNAVAILABLE.minusSeconds(10)); // still within the grace
    assertThat(call()).isEqualTo(ALICE);
    assertThat(lookups).isEqualTo(3); // each expired use asks again: it is back as soon as it is
    after(Duration.ofSeconds(10)); // past the grace
    assertThatThrownBy(this::call).isInstanceOf(Authenticator.Unavailable.class);
  }

  @Test
  void expiredKnownToken_lookedUpAgainWhenAvailable_followsTheAnswer() throws Exception {
    answers.add(Optional.of(ALICE));
    call();
    after(Authenticator.KNOWN_TTL.plusSeconds(1));
    answers.add(Optional.empty()); // revoked meanwhile
    assertThatThrownBy(this::call).isInstanceOf(Authenticator.Refused.class);
  }

  @Test
  void flushedToken_isNotServedStale() throws Exception {
    answers.add(Optional.of(ALICE));
    call();
    auth.flush(); // a user or token changed: forget everything
    assertThatThrownBy(this::call).isInstanceOf(Authenticator.Unavailable.class);
  }

  @Test
  void unknownToken_isNotServedStale_andIsAskedAgainAfterItsTtl() throws Exception {
    answers.add(Optional.empty());
    assertThatThrownBy(this::call).isInstanceOf(Authenticator.Refused.class);
    after(Authenticator.UNKNOWN_TTL.plusMillis(1));
    assertThatThrownBy(this::call).isInstanceOf(Authenticator.Unavailable.class);
    assertThat(lookups).isEqualTo(2);
  }

  @Test
  void malformedHeaders_areRefusedNamingTheRule() {
    assertThatThrownBy(() -> auth.authenticate(null)).hasMessageContaining("needs a token");
    assertThatThrownBy(() -> auth.authenticate("Basic abc")).hasMessageContaining("Bearer <token>");
    assertThatThrownBy(() -> auth.authenticate("Bearer nope")).hasMessageContaining("not valid");
    assertThat(lookups).isZero();
  }
}
