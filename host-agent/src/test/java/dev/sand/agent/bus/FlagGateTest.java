package dev.sand.agent.bus;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

class FlagGateTest {
  /** A sender that records sends and lets the test acknowledge or refuse them. */
  private static class Broker implements FlagGate.Sender {
    final List<String> sent = new ArrayList<>();
    final List<Consumer<Exception>> acks = new ArrayList<>();

    @Override
    public synchronized void send(FlagGate.Outgoing record, Consumer<Exception> onDone) {
      sent.add(record.topic());
      acks.add(onDone);
    }

    void ack(int i) {
      Consumer<Exception> ack;
      synchronized (this) {
        ack = acks.get(i);
      }
      ack.accept(null);
    }

    synchronized int size() {
      return sent.size();
    }
  }

  /** Released flags go out from the gate's own thread: wait (up to 5 s) for them. */
  private static void awaitSent(Broker broker, int count) {
    long deadline = System.currentTimeMillis() + 5000;
    while (broker.size() < count && System.currentTimeMillis() < deadline) {
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private static FlagGate.Outgoing record(String name) {
    return new FlagGate.Outgoing(name, "x", new byte[0]);
  }

  /** A flag released by an acknowledgement is not sent from the acknowledging thread. */
  @Test
  void releasedFlag_isSentFromTheGatesThread() {
    List<String> threads = new ArrayList<>();
    Broker broker =
        new Broker() {
          @Override
          public synchronized void send(FlagGate.Outgoing record, Consumer<Exception> onDone) {
            threads.add(Thread.currentThread().getName());
            super.send(record, onDone);
          }
        };
    try (FlagGate gate = new FlagGate(broker)) {
      gate.send(record("b-processing"));
      gate.sendFinal(record("a-finished"));
      broker.ack(0);
      awaitSent(broker, 2);
      assertThat(threads).hasSize(2);
      assertThat(threads.get(1)).isNotEqualTo(Thread.currentThread().getName());
    }
  }

  /** A final flag waits for the records sent before it, then goes. */
  @Test
  void finalFlag_waitsForEarlierRecords() {
    Broker broker = new Broker();
    try (FlagGate gate = new FlagGate(broker)) {
      gate.send(record("b-processing"));
      gate.send(record("c-processing"));
      gate.sendFinal(record("a-finished"));
      assertThat(broker.sent).containsExactly("b-processing", "c-processing");

      broker.ack(1);
      assertThat(broker.sent).hasSize(2);
      broker.ack(0);

      awaitSent(broker, 3);
      assertThat(broker.sent).containsExactly("b-processing", "c-processing", "a-finished");
      assertThat(gate.waiting()).isZero();
    }
  }

  /** A final flag does not wait for records sent after it. */
  @Test
  void finalFlag_doesNotWaitForLaterRecords() {
    Broker broker = new Broker();
    try (FlagGate gate = new FlagGate(broker)) {
      gate.send(record("b-processing"));
      gate.sendFinal(record("a-finished"));
      gate.send(record("d-processing"));

      broker.ack(0);

      awaitSent(broker, 3);
      assertThat(broker.sent).containsExactly("b-processing", "d-processing", "a-finished");
      assertThat(gate.waiting()).isEqualTo(1); // d is not acknowledged yet
    }
  }

  /** With nothing pending, a final flag goes at once. */
  @Test
  void finalFlag_nothingPending_goesAtOnce() {
    Broker broker = new Broker();
    try (FlagGate gate = new FlagGate(broker)) {
      gate.sendFinal(record("a-finished"));
      assertThat(broker.sent).containsExactly("a-finished");
    }
  }

  /** A refused send is sent again, and the flags behind it keep waiting meanwhile. */
  @Test
  void refusedSend_isSentAgain() throws Exception {
    Broker broker = new Broker();
    try (FlagGate gate = new FlagGate(broker)) {
      gate.send(record("b-processing"));
      gate.sendFinal(record("a-finished"));
      broker.acks.get(0).accept(new RuntimeException("broker away"));
      assertThat(gate.resent()).isEqualTo(1);
      awaitSent(broker, 2);
      assertThat(broker.sent).containsExactly("b-processing", "b-processing");

      broker.ack(1);

      awaitSent(broker, 3);
      assertThat(broker.sent).containsExactly("b-processing", "b-processing", "a-finished");
    }
  }

  // -- the window: work that ends inside it never reaches the broker --------------------------

  /** A window that ends only when the test flushes it. */
  private static FlagGate windowed(Broker broker) {
    return new FlagGate(broker, Duration.ofHours(1));
  }

  /** A one-grain call inside the window: only its result is sent. */
  @Test
  void eventFinishedInsideWindow_neitherBackupNorFlagIsSent() {
    Broker broker = new Broker();
    try (FlagGate gate = windowed(broker)) {
      gate.sendBackup(record("e-processing"), "e", true);
      gate.send(record("result"));
      gate.sendFinal(record("e-finished"), "e", 1);
      assertThat(broker.sent).isEmpty(); // waiting for the window's end

      gate.flush();

      assertThat(broker.sent).containsExactly("result");
      assertThat(gate.cancelled()).isEqualTo(1);
      broker.ack(0);
      assertThat(gate.waiting()).isZero();
    }
  }

  /**
   * D made E; E finished inside the window. D's flag waited for E's backup, which is cancelled: it
   * now waits for what E produced instead, and goes only once that is acknowledged.
   */
  @Test
  void cancelledBackup_flagsWaitingForItWaitForItsReplacements() {
    Broker broker = new Broker();
    try (FlagGate gate = windowed(broker)) {
      gate.sendBackup(record("e-processing"), "e", true);
      gate.sendFinal(record("d-finished"), "d", 1);
      gate.send(record("result"));
      gate.sendFinal(record("e-finished"), "e", 1);

      gate.flush();
      assertThat(broker.sent).containsExactly("result");
      assertThat(gate.waiting()).isEqualTo(2); // the result, and d's flag waiting for it

      broker.ack(0);

      awaitSent(broker, 2);
      assertThat(broker.sent).containsExactly("result", "d-finished");
    }
  }

  /** An event taken from the global bus is on the broker already: its flag is always sent. */
  @Test
  void redeliveredEvent_backupDroppedButFlagSent() {
    Broker broker = new Broker();
    try (FlagGate gate = windowed(broker)) {
      gate.sendBackup(record("x-processing"), "x", false);
      gate.sendFinal(record("x-finished"), "x", 0);

      gate.flush();

      assertThat(broker.sent).containsExactly("x-finished");
      assertThat(gate.cancelled()).isEqualTo(1);
    }
  }

  /** A flag that says what its instance produced waits for that, not for other events' records. */
  @Test
  void flagWithProducts_waitsForItsProductsOnly() {
    Broker broker = new Broker();
    try (FlagGate gate = windowed(broker)) {
      gate.sendBackup(record("a-processing"), "a", true); // another execution's
      gate.sendBackup(record("e-processing"), "e", true);
      gate.sendFinal(record("d-finished"), "d", 1);
      gate.flush();
      assertThat(broker.sent).containsExactly("a-processing", "e-processing");

      broker.ack(1);

      awaitSent(broker, 3);
      assertThat(broker.sent).containsExactly("a-processing", "e-processing", "d-finished");
      assertThat(gate.waiting()).isEqualTo(1); // a is still not acknowledged
    }
  }

  /** A hop to another host does not wait for the window. */
  @Test
  void queuedEvent_goesAtOnce() {
    Broker broker = new Broker();
    try (FlagGate gate = windowed(broker)) {
      gate.sendNow(record("q-queued"));
      assertThat(broker.sent).containsExactly("q-queued");
    }
  }

  /** Closing sends what is waiting. */
  @Test
  void close_flushesTheWindow() {
    Broker broker = new Broker();
    FlagGate gate = windowed(broker);
    gate.sendBackup(record("e-processing"), "e", true);
    gate.close();
    assertThat(broker.sent).containsExactly("e-processing");
  }
}
