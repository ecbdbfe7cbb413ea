package dev.sand.store;

/**
 * Whether a trigger is paused (decision 0034), and since when it is in that state.
 *
 * @param paused whether it starts nothing
 * @param changedAt when it was last paused or resumed (epoch milliseconds; 0: never)
 */
public record TriggerState(boolean paused, long changedAt) {
  /** The state of a trigger nobody paused: active since it was deployed. */
  public static final TriggerState ACTIVE = new TriggerState(false, 0);
}
