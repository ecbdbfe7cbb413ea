package dev.sand.frontend;

import dev.sand.contracts.ResultDocument;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The synchronous invocations of this frontend that wait for their result: execution id → the
 * future the reply dispatcher completes with the result document.
 *
 * <p>Thread-safe. No method blocks. An entry leaves the map when its future completes, whichever
 * way (result, timeout or {@link #abandon}), so the map only holds calls still waiting.
 */
final class PendingReplies {
  private final ConcurrentHashMap<String, CompletableFuture<ResultDocument>> waiting =
      new ConcurrentHashMap<>();

  /**
   * Registers {@code executionId} before its event is pushed, so a reply cannot overtake it.
   *
   * @return a future that completes with the result document, or with {@code null} when {@code
   *     timeout} passes first
   * @throws IllegalStateException when the id is already waiting (ids are random UUIDs)
   */
  CompletableFuture<ResultDocument> register(String executionId, Duration timeout) {
    CompletableFuture<ResultDocument> future = new CompletableFuture<>();
    if (waiting.putIfAbsent(executionId, future) != null) {
      throw new IllegalStateException("execution '" + executionId + "' is already waiting");
    }
    future.whenComplete((doc, error) -> waiting.remove(executionId, future));
    future.completeOnTimeout(null, timeout.toMillis(), TimeUnit.MILLISECONDS);
    return future;
  }

  /**
   * Hands {@code result} to the caller waiting for {@code executionId}.
   *
   * @return false when nobody waits for it (unknown, timed out or abandoned)
   */
  boolean complete(String executionId, ResultDocument result) {
    CompletableFuture<ResultDocument> future = waiting.remove(executionId);
    return future != null && future.complete(result);
  }

  /** Stops waiting for {@code executionId} (its event could not be pushed); completes with null. */
  void abandon(String executionId) {
    CompletableFuture<ResultDocument> future = waiting.remove(executionId);
    if (future != null) {
      future.complete(null);
    }
  }

  /** Stops waiting for every call (the frontend stops); each completes with null. */
  void abandonAll() {
    waiting.keySet().forEach(this::abandon);
  }

  /** How many calls are waiting. */
  int size() {
    return waiting.size();
  }
}
