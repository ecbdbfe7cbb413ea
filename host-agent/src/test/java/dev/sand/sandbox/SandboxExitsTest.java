package dev.sand.sandbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class SandboxExitsTest {
  /** Signals given before the wait end it at once, and one wait consumes them all. */
  @Test
  void await_signalsBefore_returnAtOnceAndAreConsumedTogether() throws InterruptedException {
    SandboxExits exits = new SandboxExits();
    exits.signal();
    exits.signal();

    assertThat(exits.await(Duration.ofSeconds(5))).isTrue();
    assertThat(exits.await(Duration.ofMillis(20))).isFalse();
  }

  /** A signal from another thread ends a wait that is in progress. */
  @Test
  void await_signalFromAnotherThread_endsTheWait() throws InterruptedException {
    SandboxExits exits = new SandboxExits();
    Thread signaller =
        new Thread(
            () -> {
              try {
                Thread.sleep(50);
              } catch (InterruptedException e) {
                return;
              }
              exits.signal();
            });
    signaller.start();
    long started = System.nanoTime();

    assertThat(exits.await(Duration.ofSeconds(30))).isTrue();
    assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(30));
    signaller.join();
  }
}
