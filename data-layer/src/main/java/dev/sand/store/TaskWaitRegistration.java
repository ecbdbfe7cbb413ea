package dev.sand.store;

import java.util.Arrays;

/**
 * What an agent writes when it takes a callback timer from {@code sand:timers} (callbacks, decision
 * 0033, step 3a): where the timer now is, and its limits from the timer's header.
 *
 * @param tokenHash the row key: lowercase hex SHA-256 of the token
 * @param app the application of the timer (checked against the token before)
 * @param executionId the execution of the timer (checked against the token before)
 * @param timeoutAt when the wait times out (epoch ms)
 * @param heartbeatMs how long it may go without a heartbeat (ms); 0: no heartbeat needed
 * @param host this agent's host id
 * @param member the timer's exact encoded bytes, as taken (copied in and out)
 */
public record TaskWaitRegistration(
    String tokenHash,
    String app,
    String executionId,
    long timeoutAt,
    long heartbeatMs,
    String host,
    byte[] member) {
  public TaskWaitRegistration {
    if (heartbeatMs < 0) {
      throw new IllegalArgumentException("heartbeat_ms must be >= 0, got " + heartbeatMs);
    }
    member = Arrays.copyOf(member, member.length);
  }

  @Override
  public byte[] member() {
    return Arrays.copyOf(member, member.length);
  }
}
