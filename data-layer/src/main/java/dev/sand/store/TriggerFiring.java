package dev.sand.store;

/**
 * One firing of a schedule trigger as claimed in {@code trigger_firings} (decision 0034).
 *
 * @param firing the firing time, ISO-8601 UTC with second precision ({@code 2026-11-27T02:00:00Z});
 *     text so that it sorts as it reads
 * @param executionId the execution it starts
 * @param owner the agent incarnation that publishes its INVOKE event
 * @param claimedAt when {@code owner} claimed it (epoch milliseconds)
 * @param published whether the broker acknowledged its INVOKE event
 */
public record TriggerFiring(
    String firing, String executionId, String owner, long claimedAt, boolean published) {}
