package dev.sand.agent.bus;

import static org.assertj.core.api.Assertions.assertThat;

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
}
