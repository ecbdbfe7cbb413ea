package dev.sand.agent.bus;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Keeps the recovery chain of the global bus unbroken (decision 0011): an event's FINISHED (or
 * FAILED) flag is sent only once the broker holds every record sent before it — the PROCESSING
 * backups of the events its instance produced, its execution's result. Otherwise the broker could
 * hold "A finished" without "B, made by A, is processing" (they go to different partitions), and a
 * host dying at that moment would lose B: nothing would replay it.
 *
 * <p>Records other than final flags go out at once; a final flag waits only for the records sent
 * before it, never for later ones. A send the broker refused is sent again half a second later (it
 * stays pending), so a broker that is away holds the flags back and loses nothing. Thread-safe:
 * sends come from the agent-queue thread, acknowledgements from the producer's thread; released
 * flags and resends are sent from a thread of the gate's own.
 */
final class FlagGate implements AutoCloseable {
  private static final long RESEND_DELAY_MS = 500;

  /** Sends one record; calls {@code onDone} with null on acknowledgement, else the error. */
  interface Sender {
    void send(Outgoing record, java.util.function.Consumer<Exception> onDone);
  }

  /**
   * A record for the global bus.
   *
   * @param headers record headers besides the incarnation (a FINISHED flag's {@code sand-data})
   */
  record Outgoing(String topic, String key, byte[] value, Map<String, byte[]> headers) {
    Outgoing {
      headers = Map.copyOf(headers);
    }

    Outgoing(String topic, String key, byte[] value) {
      this(topic, key, value, Map.of());
    }
  }

  private record Held(long after, Outgoing record) {}

  private final Sender sender;
  private final ScheduledExecutorService resends =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "backup-flags");
            t.setDaemon(true);
            return t;
          });
  private final TreeSet<Long> pending = new TreeSet<>();
  private final Deque<Held> held = new ArrayDeque<>();
  private long sent;
  private long resent;

  FlagGate(Sender sender) {
    this.sender = sender;
  }

  /** Sends {@code record} now, tracked until acknowledged. */
  void send(Outgoing record) {
    long seq;
    synchronized (this) {
      seq = ++sent;
      pending.add(seq);
    }
    track(seq, record);
  }

  /** Sends the final flag {@code record} once every record sent before it is acknowledged. */
  void sendFinal(Outgoing record) {
    synchronized (this) {
      if (!pending.isEmpty() || !held.isEmpty()) {
        held.add(new Held(sent, record));
        return;
      }
    }
    track(0, record);
  }

  /** Records sent and not yet acknowledged, and final flags waiting for them (for health). */
  synchronized int waiting() {
    return pending.size() + held.size();
  }

  /** How many sends the broker refused and were sent again. */
  synchronized long resent() {
    return resent;
  }

  /** Sends {@code record}; {@code seq} 0 is a final flag, which nothing waits for. */
  private void track(long seq, Outgoing record) {
    sender.send(
        record,
        error -> {
          if (error != null) {
            synchronized (this) {
              resent++;
            }
            // never from the sending thread itself: a broker that is away fails sends at once
            if (!resends.isShutdown()) {
              try {
                resends.schedule(() -> track(seq, record), RESEND_DELAY_MS, TimeUnit.MILLISECONDS);
              } catch (java.util.concurrent.RejectedExecutionException e) {
                // closing: the agent stops, and so does its resending
              }
            }
          } else if (seq != 0) {
            acknowledged(seq);
          }
        });
  }

  private void acknowledged(long seq) {
    Deque<Outgoing> ready = new ArrayDeque<>();
    synchronized (this) {
      pending.remove(seq);
      long floor = pending.isEmpty() ? Long.MAX_VALUE : pending.first();
      while (!held.isEmpty() && held.peekFirst().after() < floor) {
        ready.add(held.pollFirst().record());
      }
    }
    if (ready.isEmpty()) {
      return;
    }
    // Never from this thread: acknowledgements arrive on the producer's own I/O thread, and a
    // send may wait there for metadata that only that thread can fetch (a deadlock until
    // max.block.ms, for every flag released).
    try {
      resends.execute(() -> ready.forEach(r -> track(0, r)));
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // closing: the agent stops
    }
  }

  @Override
  public void close() {
    resends.shutdownNow();
  }
}
