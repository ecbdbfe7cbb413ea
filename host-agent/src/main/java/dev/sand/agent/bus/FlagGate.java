package dev.sand.agent.bus;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * What the agent publishes to the global bus, and when (decisions 0011 and 0014).
 *
 * <p><b>The chain never breaks.</b> An event's FINISHED (or FAILED) flag is sent only once the
 * broker holds every record sent before it — the PROCESSING backups of the events its instance
 * produced, its execution's result. Otherwise the broker could hold "A finished" without "B, made
 * by A, is processing" (they go to different partitions), and a host dying at that moment would
 * lose B: nothing would replay it. A final flag waits only for the records before it, never for
 * later ones. A send the broker refused is sent again half a second later (it stays pending), so a
 * broker that is away holds the flags back and loses nothing.
 *
 * <p><b>Work that ends inside the window never reaches the broker.</b> Records wait up to {@code
 * window} before they are sent, all of them in one burst. An event whose PROCESSING backup is still
 * waiting when its FINISHED flag arrives needs neither: what its instance produced (the successors'
 * backups, the result) arrived before the flag and takes its place in the same burst, and the flags
 * waiting for the cancelled backup now wait for those records instead. The promise holds at every
 * moment: each unfinished event is on the broker, or an unfinished ancestor is. An event already on
 * the broker before this host took it (delivered through Kafka, replayed, published by a frontend)
 * still gets its FINISHED flag; only its PROCESSING backup is dropped. So a chain of short grains
 * costs the broker one burst per window, not two records per hop.
 *
 * <p>Thread-safe: records come from the agent-queue thread, acknowledgements from the producer's
 * thread; bursts, released flags and resends are sent from a thread of the gate's own.
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

  /**
   * A record waiting for the window to end.
   *
   * @param seq its place in the order of records
   * @param eventId the event a PROCESSING backup is of, else null
   * @param origin whether this backup is the event's first record on the broker
   */
  private record Waiting(long seq, Outgoing record, String eventId, boolean origin) {}

  /** A final flag and the records it still waits for. */
  private static final class Held {
    final Outgoing record;
    final Set<Long> before = new HashSet<>();

    Held(Outgoing record) {
      this.record = record;
    }
  }

  private final Sender sender;
  private final long windowMs;
  private final ScheduledExecutorService worker =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "backup-flags");
            t.setDaemon(true);
            return t;
          });
  // records waiting for the window or sent and not yet acknowledged, by sequence number
  private final TreeSet<Long> pending = new TreeSet<>();
  // the held flags waiting for each such record
  private final Map<Long, List<Held>> heldBy = new HashMap<>();
  private final Map<String, List<Waiting>> backups = new HashMap<>();
  private List<Waiting> window = new ArrayList<>();
  private int held;
  private long sent;
  private long resent;
  private long cancelled;

  /** A gate that sends every record at once. */
  FlagGate(Sender sender) {
    this(sender, Duration.ZERO);
  }

  /**
   * @param window how long records wait for the FINISHED flags that make them unnecessary
   */
  FlagGate(Sender sender, Duration window) {
    this.sender = sender;
    this.windowMs = window.toMillis();
  }

  /** Sends {@code record} (a result) with the window's burst, tracked until acknowledged. */
  void send(Outgoing record) {
    enqueue(record, null, false, true);
  }

  /**
   * Sends {@code record} at once, tracked until acknowledged: a QUEUED event, which another host
   * waits for (a hop through the global bus).
   */
  void sendNow(Outgoing record) {
    enqueue(record, null, false, false);
  }

  /**
   * Sends the PROCESSING backup of event {@code eventId}, tracked until acknowledged.
   *
   * @param origin true when this is the event's first record on the broker, so that a FINISHED flag
   *     arriving within the window cancels both
   */
  void sendBackup(Outgoing record, String eventId, boolean origin) {
    enqueue(record, eventId, origin, true);
  }

  /** {@link #sendFinal(Outgoing, String, int)} of a flag that waits for every earlier record. */
  void sendFinal(Outgoing record) {
    sendFinal(record, null, -1);
  }

  /**
   * Sends the final flag {@code record} of event {@code eventId} once the records its instance
   * produced are acknowledged — the {@code produced} records given to this gate just before it (the
   * grain worker pushes them and the flag in one atomic push), or every earlier record when {@code
   * produced} is negative (unknown) — or drops it with the event's backup when that is still
   * waiting (see above).
   */
  void sendFinal(Outgoing record, String eventId, int produced) {
    Deque<Outgoing> ready = new ArrayDeque<>();
    boolean drop;
    boolean goesNow;
    synchronized (this) {
      List<Waiting> mine = eventId == null ? List.of() : backups.remove(eventId);
      mine = mine == null ? List.of() : mine;
      for (Waiting w : mine) {
        window.remove(w);
        pending.remove(w.seq());
        cancelled++;
      }
      Set<Long> products = produced < 0 ? new HashSet<>(pending) : recent(produced);
      for (Waiting w : mine) {
        replace(w.seq(), products, ready);
      }
      // an event on the broker before this host took it needs its flag, whatever happened here
      drop = !mine.isEmpty() && mine.stream().allMatch(Waiting::origin);
      goesNow = !drop && products.isEmpty();
      if (!drop && !goesNow) {
        Held flag = new Held(record);
        for (long seq : products) {
          flag.before.add(seq);
          heldBy.computeIfAbsent(seq, k -> new ArrayList<>(1)).add(flag);
        }
        held++;
      }
    }
    if (goesNow) {
      track(0, record);
    }
    sendReleased(ready);
  }

  /** Records waiting, sent and not yet acknowledged, and final flags held (for health). */
  synchronized int waiting() {
    return pending.size() + held;
  }

  /** How many sends the broker refused and were sent again. */
  synchronized long resent() {
    return resent;
  }

  /** How many backups were never sent because their event finished within the window. */
  synchronized long cancelled() {
    return cancelled;
  }

  /** Sends the records waiting now (at the end of each window, and on close). */
  void flush() {
    List<Waiting> burst;
    synchronized (this) {
      burst = window;
      window = new ArrayList<>();
      backups.clear();
    }
    for (Waiting w : burst) {
      track(w.seq(), w.record());
    }
  }

  private void enqueue(Outgoing record, String eventId, boolean origin, boolean wait) {
    long seq;
    boolean first = false;
    boolean now = windowMs <= 0 || !wait;
    synchronized (this) {
      seq = ++sent;
      pending.add(seq);
      if (!now) {
        Waiting w = new Waiting(seq, record, eventId, origin);
        first = window.isEmpty();
        window.add(w);
        if (eventId != null) {
          backups.computeIfAbsent(eventId, k -> new ArrayList<>(1)).add(w);
        }
      }
    }
    if (now) {
      track(seq, record);
    } else if (first) {
      schedule(this::flush, windowMs);
    }
  }

  /** The last {@code count} records given to the gate that are not acknowledged yet. */
  private Set<Long> recent(int count) {
    return new HashSet<>(pending.subSet(sent - count, false, sent, true));
  }

  /**
   * Record {@code seq} is done with: acknowledged ({@code instead} empty) or cancelled, in which
   * case the flags that waited for it wait for {@code instead}, the records that replace it. Flags
   * left waiting for nothing go to {@code ready}.
   */
  private void replace(long seq, Set<Long> instead, Deque<Outgoing> ready) {
    pending.remove(seq);
    List<Held> flags = heldBy.remove(seq);
    if (flags == null) {
      return;
    }
    for (Held flag : flags) {
      flag.before.remove(seq);
      for (long other : instead) {
        if (flag.before.add(other)) {
          heldBy.computeIfAbsent(other, k -> new ArrayList<>(1)).add(flag);
        }
      }
      if (flag.before.isEmpty()) {
        held--;
        ready.add(flag.record);
      }
    }
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
            schedule(() -> track(seq, record), RESEND_DELAY_MS);
          } else if (seq != 0) {
            Deque<Outgoing> ready = new ArrayDeque<>();
            synchronized (this) {
              replace(seq, Set.of(), ready);
            }
            sendReleased(ready);
          }
        });
  }

  private void sendReleased(Deque<Outgoing> ready) {
    if (ready.isEmpty()) {
      return;
    }
    // Never from this thread: acknowledgements arrive on the producer's own I/O thread, and a
    // send may wait there for metadata that only that thread can fetch (a deadlock until
    // max.block.ms, for every flag released).
    schedule(() -> ready.forEach(r -> track(0, r)), 0);
  }

  private void schedule(Runnable task, long delayMs) {
    if (worker.isShutdown()) {
      return; // closing: the agent stops, and so does its sending
    }
    try {
      worker.schedule(task, delayMs, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      // closing
    }
  }

  /** Sends what is waiting, then stops the gate's thread. */
  @Override
  public void close() {
    flush();
    worker.shutdownNow();
  }
}
