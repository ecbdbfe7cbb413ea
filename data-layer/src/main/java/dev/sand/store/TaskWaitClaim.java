package dev.sand.store;

import dev.sand.contracts.TaskWaitStatus;
import java.util.Optional;

/**
 * What a callback's lightweight transaction on {@code task_waits} found (decision 0033, step 4): it
 * took the wait, found none to act on, or found it ended.
 */
public sealed interface TaskWaitClaim {
  /**
   * The wait was WAITING and the callback's write applied.
   *
   * @param before the row as read just before (its host and member say which timer to nudge); empty
   *     when the callback made the row (it came before the registration)
   */
  record Taken(Optional<TaskWait> before) implements TaskWaitClaim {}

  /** No row: nothing registered that a heartbeat could extend. */
  record Missing() implements TaskWaitClaim {}

  /**
   * The wait had already ended.
   *
   * @param status how
   * @param outcome its outcome JSON, when it has one
   */
  record Ended(TaskWaitStatus status, Optional<String> outcome) implements TaskWaitClaim {}
}
