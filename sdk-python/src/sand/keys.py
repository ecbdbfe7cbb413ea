"""Every Redis key SAND's Python side uses, built here and nowhere else.

The templates come from ``contracts.thrift`` (generated into ``sand_contracts``); the
Java side (``dev.sand.contracts.Keys``) fills the same templates, and both are checked
against ``local-bus/contracts/src/test/resources/contract-cases.json``. One prefix
(``sand:``), fields joined by ``:``. Application, grain, host and execution names
follow the rules of :mod:`sand.contracts` and never contain ``:``, so a key splits
back unambiguously even when the user's part of a data key does.

===================================  ============  =============================================
key                                  Redis type    holds
===================================  ============  =============================================
``sand:q:<app>:<grain>``             list          a grain's events (LPUSH in, BRPOP out)
``sand:agent:<host>``                list          backups and results for the host agent
``sand:reply:<frontend>``            list          RESULT/ERROR events for one frontend's
                                                   synchronous callers
``sand:result:<execution>``          string        the result document (JSON, TTL 1 h)
``sand:timers``                      sorted set    TIMER events, score = due epoch ms
``sand:app:<app>``                   string        a deployed application's metadata (JSON)
``sand:ready:<app>:<grain>``         string        set with a TTL while a grain worker is ready
``sand:broken:<app>:<grain>``        string        with the same TTL: why its grain cannot be
                                                   imported (its events fail)
``sand:join:<app>:<group>``          hash          a Parallel/Map/native-join group
``sand:data:<app>:<scope>:<key>``    string        a ``context.data`` value of scope ``local``
``sand:gdata:<app>:requests``        list          global-data requests to the host agent
``sand:gdata:<app>:reply:<request>`` list          the agent's reply to one request (TTL 60 s)
``sand:metrics:<app>:<grain>``       hash          a grain's counters for the agent's /metrics
===================================  ============  =============================================

On the cluster each application's Redis ACL user may read and write only the keys of
:func:`app_owned_patterns` and only push to those of :func:`write_only_patterns`.
"""

from __future__ import annotations

from sand_contracts import constants as _c


def data_prefix(app: str, scope: str) -> str:
    """The common prefix of every data-layer key of ``app`` in ``scope`` (ends in ``:``)."""
    return _c.KEY_DATA.format(app=app, scope=scope, key="")


def data_key(app: str, scope: str, key: str) -> str:
    """The Redis key of the data-layer value ``key`` of ``app`` in ``scope``."""
    return _c.KEY_DATA.format(app=app, scope=scope, key=key)


def data_requests_key(app: str) -> str:
    """Where ``app``'s grains push global-data requests for their host agent (list)."""
    return _c.KEY_GDATA_REQUESTS.format(app=app)


def data_reply_key(app: str, request_id: str) -> str:
    """Where the host agent answers one global-data request of ``app`` (list of one)."""
    return _c.KEY_GDATA_REPLY.format(app=app, request=request_id)


def queue_key(app: str, grain: str) -> str:
    """A grain's local queue (list; LPUSH in, BRPOP out)."""
    return _c.KEY_QUEUE.format(app=app, grain=grain)


def agent_key(host: str) -> str:
    """The host agent's queue: backup copies, results, invocation copies."""
    return _c.KEY_AGENT.format(host=host)


def reply_key(frontend: str) -> str:
    """Results for the synchronous callers of one frontend."""
    return _c.KEY_REPLY.format(frontend=frontend)


def result_key(execution_id: str) -> str:
    """An execution's result document (JSON)."""
    return _c.KEY_RESULT.format(execution=execution_id)


def incarnation_key() -> str:
    """The incarnation id of the host agent running on this local bus (string)."""
    return str(_c.KEY_INCARNATION)


def timers_key() -> str:
    """Workflow timers (sorted set; score = due epoch ms)."""
    return str(_c.KEY_TIMERS)


def app_key(app: str) -> str:
    """A deployed application's metadata (JSON)."""
    return _c.KEY_APP.format(app=app)


def ready_key(app: str, grain: str) -> str:
    """Set by a grain worker while it is ready to take events."""
    return _c.KEY_READY.format(app=app, grain=grain)


def broken_key(app: str, grain: str) -> str:
    """Set beside the readiness key by a grain worker whose grain cannot be imported: why."""
    return _c.KEY_BROKEN.format(app=app, grain=grain)


def metrics_key(app: str, grain: str) -> str:
    """A grain's counters (hash), written by its worker, read by the agent's ``/metrics``."""
    return _c.KEY_METRICS.format(app=app, grain=grain)


def join_key(app: str, group_id: str) -> str:
    """One group (Parallel, Map, native join) of the workflow engine's store (hash)."""
    return _c.KEY_JOIN.format(app=app, group=group_id)


def app_owned_patterns(app: str) -> list[str]:
    """The key patterns ``app``'s ACL user may read and write; nothing of another app matches."""
    return [pattern.format(app=app) for pattern in _c.ACL_APP_OWNED]


def aborted_key(app: str) -> str:
    """The executions of ``app`` stopped on request (sorted set: id -> epoch ms of the stop)."""
    return _c.KEY_ABORTED.format(app=app)


def read_only_patterns(app: str) -> list[str]:
    """The key patterns ``app``'s ACL user may only read: its stopped executions."""
    return [pattern.format(app=app) for pattern in _c.ACL_APP_READ_ONLY]


def write_only_patterns() -> list[str]:
    """The key patterns an app's ACL user may only push to: they hold every app's events."""
    return list(_c.ACL_APP_WRITE_ONLY)


def redis_app_user(app: str) -> str:
    """The Redis ACL user of ``app``."""
    return _c.REDIS_APP_USER.format(app=app)


def grain_topic(app: str, grain: str) -> str:
    """The Kafka topic that delivers events to ``grain`` of ``app`` (key: execution id)."""
    return _c.TOPIC_GRAIN.format(app=app, grain=grain)


RESULTS_TOPIC: str = _c.TOPIC_RESULTS
HISTORY_TOPIC: str = _c.TOPIC_HISTORY
"""Final RESULT/ERROR events of every execution."""
