package dev.sand.contracts;

/**
 * The {@code type} of each history event (decision 0018), as {@code frontend/openapi.yaml}'s {@code
 * HistoryEvent} enumerates them: the one place Java spells them. The workflow engine (Python,
 * {@code sand_workflows.history.TYPES}) writes the events; Java reads a few and writes {@link
 * #EXECUTION_ABORTED}. {@code HistoryTypesTest} fails when this list and the document's differ, as
 * {@code tests/unit/sdk/test_client_openapi.py} does for the Python list.
 */
public final class HistoryTypes {
  public static final String EXECUTION_STARTED = "ExecutionStarted";
  public static final String EXECUTION_REDRIVEN = "ExecutionRedriven";
  public static final String STATE_ENTERED = "StateEntered";
  public static final String STATE_EXITED = "StateExited";
  public static final String STATE_FAILED = "StateFailed";
  public static final String TASK_SCHEDULED = "TaskScheduled";
  public static final String TASK_STARTED = "TaskStarted";
  public static final String TASK_SUCCEEDED = "TaskSucceeded";
  public static final String TASK_FAILED = "TaskFailed";
  public static final String TASK_SUBMITTED = "TaskSubmitted";
  public static final String TASK_TIMED_OUT = "TaskTimedOut";
  public static final String RETRY_SCHEDULED = "RetryScheduled";
  public static final String CAUGHT = "Caught";
  public static final String WAIT_STARTED = "WaitStarted";
  public static final String WAIT_ENDED = "WaitEnded";
  public static final String PARALLEL_STARTED = "ParallelStarted";
  public static final String MAP_STARTED = "MapStarted";
  public static final String BRANCH_SUCCEEDED = "BranchSucceeded";
  public static final String BRANCH_FAILED = "BranchFailed";
  public static final String EXECUTION_SUCCEEDED = "ExecutionSucceeded";
  public static final String EXECUTION_FAILED = "ExecutionFailed";

  /** Written by the frontend that stops an execution (the engine never gets to). */
  public static final String EXECUTION_ABORTED = "ExecutionAborted";

  private HistoryTypes() {}
}
