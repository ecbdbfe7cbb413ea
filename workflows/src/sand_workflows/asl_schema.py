"""The fields of the Amazon States Language: which ones each state type may have.

Per query language (JSONPath, JSONata), with the fields SAND refuses rather than ignore
and the message for a field in the wrong place. ``asl_loader`` checks states against
these tables; ``asl_fields`` compiles the values.
"""

from __future__ import annotations

_COMMON = {"Type", "Comment"}
# A Task Resource ending in it waits for a callback with its task token (decision 0033).
CALLBACK_SUFFIX = ".waitForTaskToken"
_IO = {"InputPath", "OutputPath"}
FLOW_FIELDS = {"Next", "End"}  # a state's transition
_RESULT = {"Parameters", "ResultSelector", "ResultPath", "Retry", "Catch"}
ALLOWED_FIELDS: dict[str, set[str]] = {
    "Task": _COMMON
    | _IO
    | FLOW_FIELDS
    | _RESULT
    | {
        "Resource",
        "TimeoutSeconds",
        "TimeoutSecondsPath",
        "HeartbeatSeconds",
        "HeartbeatSecondsPath",
        "Credentials",
    },
    "Pass": _COMMON | _IO | FLOW_FIELDS | {"Parameters", "ResultPath", "Result"},
    "Choice": _COMMON | _IO | {"Choices", "Default"},
    "Wait": _COMMON | _IO | FLOW_FIELDS | {"Seconds", "SecondsPath", "Timestamp", "TimestampPath"},
    "Succeed": _COMMON | _IO,
    "Fail": _COMMON | {"Error", "ErrorPath", "Cause", "CausePath"},
    "Parallel": _COMMON | _IO | FLOW_FIELDS | _RESULT | {"Branches"},
    "Map": _COMMON
    | _IO
    | FLOW_FIELDS
    | _RESULT
    | {
        "ItemsPath",
        "ItemSelector",
        "ItemProcessor",
        "Iterator",
        "MaxConcurrency",
        "MaxConcurrencyPath",
        "Label",
    },
}
# Assign is allowed in both query languages on these types (not on Succeed and Fail).
ASSIGNING_TYPES = {"Task", "Pass", "Choice", "Wait", "Parallel", "Map"}
for _typ in ASSIGNING_TYPES:
    ALLOWED_FIELDS[_typ] = ALLOWED_FIELDS[_typ] | {"Assign"}
# The fields of a JSONata state (spec "JSONata"; Arguments/Output replace the paths).
_J_COMMON = {"Type", "Comment", "QueryLanguage"}
JSONATA_FIELDS: dict[str, set[str]] = {
    "Task": _J_COMMON
    | FLOW_FIELDS
    | {
        "Resource",
        "Arguments",
        "Output",
        "Assign",
        "Retry",
        "Catch",
        "TimeoutSeconds",
        "HeartbeatSeconds",
        "Credentials",
    },
    "Pass": _J_COMMON | FLOW_FIELDS | {"Output", "Assign"},
    "Choice": _J_COMMON | {"Choices", "Default", "Output", "Assign"},
    "Wait": _J_COMMON | FLOW_FIELDS | {"Seconds", "Timestamp", "Output", "Assign"},
    "Succeed": _J_COMMON | {"Output"},
    "Fail": _J_COMMON | {"Error", "Cause"},
    "Parallel": _J_COMMON
    | FLOW_FIELDS
    | {"Branches", "Arguments", "Output", "Assign", "Retry", "Catch"},
    "Map": _J_COMMON
    | FLOW_FIELDS
    | {
        "ItemProcessor",
        "Iterator",
        "Items",
        "ItemSelector",
        "MaxConcurrency",
        "Output",
        "Assign",
        "Retry",
        "Catch",
        "Label",
    },
}
for _typ in ALLOWED_FIELDS:
    ALLOWED_FIELDS[_typ] = ALLOWED_FIELDS[_typ] | {"QueryLanguage"}
JSONATA_ONLY = {"Arguments", "Output", "Items", "Condition"}
QUERY_LANGUAGES = ("JSONPath", "JSONata")
ASL_TOP_FIELDS = {"StartAt", "States", "Comment", "Version", "QueryLanguage"}
# Spec fields that SAND does not implement: refused rather than silently ignored.
UNSUPPORTED_FIELDS = {
    "Map": {
        "ItemReader",
        "ItemBatcher",
        "ResultWriter",
        "ToleratedFailurePercentage",
        "ToleratedFailurePercentagePath",
        "ToleratedFailureCount",
        "ToleratedFailureCountPath",
    },
}


def misplaced(key: str, typ: str, jsonata: bool) -> str:
    """Why ``key`` does not belong in a ``typ`` state of that query language."""
    if jsonata and key in ALLOWED_FIELDS[typ]:
        return (
            f"'{key}' is a JSONPath field and this state uses JSONata"
            " (use Arguments and Output with {% %} expressions instead)"
        )
    if not jsonata and key in JSONATA_FIELDS[typ]:
        return (
            f"'{key}' is a JSONata field and this state uses JSONPath"
            ' (set "QueryLanguage": "JSONata" on the state or the machine)'
        )
    return f"unknown field '{key}' in a {typ} state"
