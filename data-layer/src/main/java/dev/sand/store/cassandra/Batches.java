package dev.sand.store.cassandra;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DriverException;
import com.datastax.oss.driver.api.core.cql.BatchStatement;
import com.datastax.oss.driver.api.core.cql.BatchStatementBuilder;
import com.datastax.oss.driver.api.core.cql.BatchableStatement;
import com.datastax.oss.driver.api.core.cql.DefaultBatchType;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Many writes in few requests: on a small host Cassandra's cost is per request more than per row.
 * Cassandra refuses batches over {@code batch_size_fail_threshold} (50 KiB by default), so
 * statements go in unlogged batches of about {@value #BATCH_BYTES} bytes, sent in parallel; a
 * larger statement goes alone (a single write has no such limit). Cassandra's warning thresholds (5
 * KiB, 10 partitions by default) are raised to match in SAND's own {@code cassandra.yaml}; a
 * cluster of the user's keeps its defaults and only logs a warning (decision 0030).
 */
final class Batches {
  static final int BATCH_BYTES = 24 * 1024;

  /** A statement and about how many bytes it writes. */
  record Write(BatchableStatement<?> statement, int bytes) {}

  private Batches() {}

  /**
   * Sends {@code writes} without waiting; the future completes when Cassandra took them all
   * (exceptionally with the driver's exception when it did not).
   */
  static CompletableFuture<Void> send(CqlSession session, List<Write> writes) {
    if (writes.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    try {
      List<CompletableFuture<?>> sent = new ArrayList<>();
      BatchStatementBuilder batch = BatchStatement.builder(DefaultBatchType.UNLOGGED);
      int bytes = 0;
      for (Write write : writes) {
        if (bytes > 0 && bytes + write.bytes() > BATCH_BYTES) {
          sent.add(session.executeAsync(batch.build()).toCompletableFuture());
          batch = BatchStatement.builder(DefaultBatchType.UNLOGGED);
          bytes = 0;
        }
        batch.addStatement(write.statement());
        bytes += write.bytes();
      }
      sent.add(session.executeAsync(batch.build()).toCompletableFuture());
      return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new));
    } catch (DriverException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * About how many bytes {@code texts} take in a write: a fixed overhead plus their UTF-8 lengths
   * (not their lengths in chars: text of three-byte characters would otherwise fill a batch to
   * three times its size, past Cassandra's refusal).
   */
  static int size(String... texts) {
    int bytes = 128;
    for (String text : texts) {
      bytes += text == null ? 0 : utf8Length(text);
    }
    return bytes;
  }

  /** The length of {@code text} encoded as UTF-8, without encoding it. */
  static int utf8Length(String text) {
    int bytes = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      // a surrogate pair (4 bytes) is two chars of 2 bytes each
      bytes += c < 0x80 ? 1 : c < 0x800 || Character.isSurrogate(c) ? 2 : 3;
    }
    return bytes;
  }
}
