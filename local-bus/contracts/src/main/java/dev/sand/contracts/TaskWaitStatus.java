package dev.sand.contracts;

/**
 * Where the wait of a task token is (callbacks, decision 0033), stored by name in {@code
 * sand.task_waits.status}: the names are the {@code TASK_WAIT_*} constants of contracts.thrift
 * (checked by a test).
 */
public enum TaskWaitStatus {
  /** Registered or not, no outcome yet: a callback or a heartbeat may still come. */
  WAITING,
  /** A callback sent the task's output. */
  SUCCEEDED,
  /** A callback failed the task with an error and a cause. */
  FAILED,
  /** Its timeout or heartbeat timeout passed first. */
  TIMED_OUT;

  /** Whether the wait has its outcome: nothing changes it any more. */
  public boolean ended() {
    return this != WAITING;
  }

  /**
   * The status named {@code name}.
   *
   * @throws IllegalArgumentException naming the value when it is none
   */
  public static TaskWaitStatus of(String name) {
    for (TaskWaitStatus status : values()) {
      if (status.name().equals(name)) {
        return status;
      }
    }
    throw new IllegalArgumentException("unknown task wait status '" + name + "'");
  }
}
