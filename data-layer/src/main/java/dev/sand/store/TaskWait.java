package dev.sand.store;

import dev.sand.contracts.TaskWaitStatus;
import java.util.Arrays;
import java.util.Optional;

/**
 * One row of {@code task_waits} (callbacks, decision 0033): the wait of a task token, as last
 * written by the agent that registered its timer and by callbacks.
 *
 * @param tokenHash the row key: lowercase hex SHA-256 of the token
 * @param app the application the token names
 * @param executionId the execution the token names
 * @param status where the wait is
 * @param outcome the outcome JSON ({@link dev.sand.contracts.TaskOutcomes}) once ended; else empty
 * @param timeoutAt when the wait times out (epoch ms); 0 when not registered yet (a callback came
 *     first)
 * @param heartbeatMs how long it may go without a heartbeat (ms); 0: no heartbeat needed
 * @param beatAt the registration or the last heartbeat (epoch ms); 0 when not registered yet
 * @param host the host whose {@code sand:timers} holds its timer; empty when not registered yet
 * @param member the timer's exact encoded bytes in that sorted set; empty when not registered yet
 *     (copied in and out: the record stays immutable)
 */
public record TaskWait(
    String tokenHash,
    String app,
    String executionId,
    TaskWaitStatus status,
    Optional<String> outcome,
    long timeoutAt,
    long heartbeatMs,
    long beatAt,
    Optional<String> host,
    Optional<byte[]> member) {
  public TaskWait {
    member = member.map(bytes -> Arrays.copyOf(bytes, bytes.length));
  }

  @Override
  public Optional<byte[]> member() {
    return member.map(bytes -> Arrays.copyOf(bytes, bytes.length));
  }

  /** Whether its timer was registered by an agent (a callback may have made the row before). */
  public boolean registered() {
    return host.isPresent() && member.isPresent();
  }
}
