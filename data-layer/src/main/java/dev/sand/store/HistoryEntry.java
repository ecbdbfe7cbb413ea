package dev.sand.store;

/**
 * One recorded history event of an execution (table {@code execution_history}).
 *
 * @param executionId the execution
 * @param atMs the event's {@code at_ms}
 * @param batch the HISTORY message it came in (its event id): events of one message keep their
 *     order, a message delivered twice is stored once
 * @param index its place in that message
 * @param event the event as JSON text
 */
public record HistoryEntry(String executionId, long atMs, String batch, int index, String event) {
  public HistoryEntry {
    if (executionId == null || executionId.isBlank()) {
      throw new IllegalArgumentException("history entry: execution id must be non-blank");
    }
    if (batch == null || index < 0 || event == null) {
      throw new IllegalArgumentException(
          "history entry of " + executionId + ": batch, index >= 0 and event are required");
    }
  }

  /** Where a history page continues after this entry. */
  public Cursor cursor() {
    return new Cursor(atMs, batch, index);
  }

  /**
   * Where a history page stopped: the last entry returned, in clustering order.
   *
   * @param atMs its {@code at_ms}
   * @param batch its message
   * @param index its place in the message
   */
  public record Cursor(long atMs, String batch, int index) {
    public Cursor {
      if (batch == null || index < 0) {
        throw new IllegalArgumentException("history cursor: batch and index >= 0 are required");
      }
    }
  }

  /**
   * One page of an execution's history.
   *
   * @param entries the events in order
   * @param next where the next page starts, or null when this is the last one
   * @param truncated whether the execution reached the cap of recorded events
   */
  public record Page(java.util.List<HistoryEntry> entries, Cursor next, boolean truncated) {
    public Page {
      entries = java.util.List.copyOf(entries);
    }
  }
}
