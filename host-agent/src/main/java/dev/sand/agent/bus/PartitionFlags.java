package dev.sand.agent.bus;

import dev.sand.bus.thrift.EventFlag;
import dev.sand.bus.thrift.EventMessage;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * The flags of one partition of a grain topic, as the host that owns the partition reads them
 * (decision 0011). Every event that reaches the grain has records here, keyed by execution id:
 * QUEUED (delivered through Kafka), PROCESSING (taken on some host, named by its incarnation),
 * FINISHED or FAILED. This class keeps the events whose latest flag is not final, in offset order,
 * and answers the owner's three questions: deliver this record now? up to where may I commit? whose
 * work must I replay?
 *
 * <p>Not thread-safe: the global bus thread owns it.
 */
final class PartitionFlags {
  /**
   * An event without a final flag yet.
   *
   * @param firstOffset the offset of its first record here (the commit may not pass it)
   * @param incarnation who processes it: an agent incarnation, or empty when nobody took it
   * @param seenMs when its first record was read (monotonic ms)
   */
  record Unfinished(
      String eventId, long firstOffset, EventMessage event, String incarnation, long seenMs) {
    Unfinished takenBy(String newIncarnation, EventMessage newEvent) {
      return new Unfinished(eventId, firstOffset, newEvent, newIncarnation, seenMs);
    }
  }

  // Final flags can arrive before the PROCESSING record (a frontend's backup races the agent's
  // flag): remember that many finished ids, so a late PROCESSING record is not taken as new work.
  private static final int FINISHED_MEMORY = 100_000;

  /** The incarnation of a PROCESSING record without the header (an older writer). */
  static final String UNKNOWN = "unknown";

  private final LinkedHashMap<String, Unfinished> unfinished = new LinkedHashMap<>();
  private final LinkedHashMap<String, Boolean> finished =
      new LinkedHashMap<>(1024, 0.75f, false) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
          return size() > FINISHED_MEMORY;
        }
      };
  private final long caughtUpAt;
  private long position;
  private long lastCommitted;
  private long committing = -1;

  /**
   * @param position the offset reading starts from (the committed offset)
   * @param endAtAssignment the partition's end when it was assigned: the owner decides whose work
   *     to replay only after it has read up to there
   */
  PartitionFlags(long position, long endAtAssignment) {
    this.position = position;
    this.lastCommitted = position;
    this.caughtUpAt = endAtAssignment;
  }

  /**
   * Reads the record at {@code offset}. Returns true when the owner must deliver the event to its
   * local bus now: a QUEUED event nobody took, read once the owner is caught up (before that, the
   * decision waits for {@link #orphans}).
   *
   * @param incarnation the record's incarnation header (empty when absent)
   * @param self the reading agent's incarnation (it takes what it delivers)
   */
  boolean read(long offset, EventMessage event, String incarnation, String self, long nowMs) {
    position = offset + 1;
    String id = event.getEvent_id();
    EventFlag flag = event.getFlag();
    if (flag == EventFlag.FINISHED || flag == EventFlag.FAILED) {
      unfinished.remove(id);
      finished.put(id, Boolean.TRUE);
      return false;
    }
    if (finished.containsKey(id)) {
      return false;
    }
    Unfinished known = unfinished.get(id);
    if (flag == EventFlag.PROCESSING) {
      // taken by someone we cannot name: never "nobody", so it waits like an unknown host
      incarnation = incarnation.isEmpty() ? UNKNOWN : incarnation;
      unfinished.put(
          id,
          known == null
              ? new Unfinished(id, offset, event, incarnation, nowMs)
              : known.takenBy(incarnation, event));
      return false;
    }
    if (flag != EventFlag.QUEUED || known != null) {
      return false; // a QUEUED record read again, or a flag this log does not track
    }
    boolean deliver = caughtUp();
    unfinished.put(id, new Unfinished(id, offset, event, deliver ? self : "", nowMs));
    return deliver;
  }

  /** Whether the owner has read everything that was in the partition when it got it. */
  boolean caughtUp() {
    return position >= caughtUpAt;
  }

  /** The next offset to read. */
  long position() {
    return position;
  }

  /** The offset the owner may commit: its first unfinished event's, else its position. */
  long committable() {
    Iterator<Unfinished> first = unfinished.values().iterator();
    return first.hasNext() ? first.next().firstOffset() : position;
  }

  /**
   * The committable offset if it moved since the last commit and is not being committed now (it is
   * then noted as being committed), else -1.
   */
  long toCommit() {
    long offset = committable();
    if (offset == lastCommitted || offset == committing) {
      return -1;
    }
    committing = offset;
    return offset;
  }

  /** The outcome of committing {@code offset}: a refused commit is tried again later. */
  void committed(long offset, boolean ok) {
    if (ok) {
      lastCommitted = Math.max(lastCommitted, offset);
    }
    if (committing == offset) {
      committing = -1;
    }
  }

  /**
   * The unfinished events whose processing host is gone, once caught up: taken by an incarnation
   * that {@code dead} says is dead, or by nobody (QUEUED only). Empty before catching up.
   */
  List<Unfinished> orphans(Predicate<Unfinished> dead) {
    if (!caughtUp()) {
      return List.of();
    }
    List<Unfinished> found = new ArrayList<>();
    for (Unfinished u : unfinished.values()) {
      if (u.incarnation().isEmpty() || dead.test(u)) {
        found.add(u);
      }
    }
    return found;
  }

  /** Notes that {@code self} took over {@code eventId} (it replayed it). */
  void adopt(String eventId, String self, EventMessage event) {
    unfinished.computeIfPresent(eventId, (id, u) -> u.takenBy(self, event));
  }

  /** Drops {@code eventId} (its execution was ended for good). */
  void forget(String eventId) {
    unfinished.remove(eventId);
    finished.put(eventId, Boolean.TRUE);
  }

  /** How many events have no final flag yet. */
  int unfinishedCount() {
    return unfinished.size();
  }
}
