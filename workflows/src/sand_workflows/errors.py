"""Problems found in a definition, and the error names an execution can fail with."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Problem:
    """One rule a definition breaks.

    ``location`` names the file and the state or grain (``main.yaml: States.Check.Choices[1]``);
    ``message`` names the rule and the offending value.
    """

    location: str
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


class WorkflowError(Exception):
    """A definition is invalid; ``problems`` lists every rule it breaks (never empty)."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)


class StatesError(Exception):
    """Raised inside the interpreter when a state reports an error.

    It never escapes the engine: the engine turns it into Retry, Catch or ``Failed``.
    """

    def __init__(self, error: str, cause: str) -> None:
        self.error = error
        self.cause = cause
        super().__init__(f"{error}: {cause}")


# Error names of Appendix A of the States Language spec, plus the two AWS adds
# (States.Runtime, States.DataLimitExceeded) which the runner and the engine report.
ALL = "States.ALL"
HEARTBEAT_TIMEOUT = "States.HeartbeatTimeout"
TIMEOUT = "States.Timeout"
TASK_FAILED = "States.TaskFailed"
PERMISSIONS = "States.Permissions"
RESULT_PATH_MATCH_FAILURE = "States.ResultPathMatchFailure"
PARAMETER_PATH_FAILURE = "States.ParameterPathFailure"
BRANCH_FAILED = "States.BranchFailed"
NO_CHOICE_MATCHED = "States.NoChoiceMatched"
INTRINSIC_FAILURE = "States.IntrinsicFailure"
EXCEED_TOLERATED_FAILURE_THRESHOLD = "States.ExceedToleratedFailureThreshold"
ITEM_READER_FAILED = "States.ItemReaderFailed"
RESULT_WRITER_FAILED = "States.ResultWriterFailed"
RUNTIME = "States.Runtime"
DATA_LIMIT_EXCEEDED = "States.DataLimitExceeded"
QUERY_EVALUATION_ERROR = "States.QueryEvaluationError"

KNOWN_ERRORS = frozenset(
    {
        ALL,
        HEARTBEAT_TIMEOUT,
        TIMEOUT,
        TASK_FAILED,
        PERMISSIONS,
        RESULT_PATH_MATCH_FAILURE,
        PARAMETER_PATH_FAILURE,
        BRANCH_FAILED,
        NO_CHOICE_MATCHED,
        INTRINSIC_FAILURE,
        EXCEED_TOLERATED_FAILURE_THRESHOLD,
        ITEM_READER_FAILED,
        RESULT_WRITER_FAILED,
        RUNTIME,
        DATA_LIMIT_EXCEEDED,
        QUERY_EVALUATION_ERROR,
    }
)
