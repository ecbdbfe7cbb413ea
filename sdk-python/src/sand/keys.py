"""Every Redis key SAND's Python side uses, built here and nowhere else.

One prefix (``sand:``) and one template style (``sand:<kind>:<app>:...``, fields
joined by ``:``). Application names match ``[a-z0-9-]+`` and scopes are fixed
words, so a key splits back unambiguously even when the user's part contains ``:``.

Layout
======

===================================  ============  =============================================
key                                  Redis type    holds
===================================  ============  =============================================
``sand:data:<app>:<scope>:<key>``    string        a value of the data layer (``context.data``);
                                                   ``<scope>`` is ``local`` or ``global``, the
                                                   value is encoded by :mod:`sand.data`
===================================  ============  =============================================

Keys are per application; on the cluster each application's Redis ACL user may
only touch ``sand:data:<app>:*``.
"""

from __future__ import annotations

PREFIX = "sand"
SEPARATOR = ":"


def data_prefix(app: str, scope: str) -> str:
    """The common prefix of every data-layer key of ``app`` in ``scope`` (ends in ``:``)."""
    return SEPARATOR.join((PREFIX, "data", app, scope)) + SEPARATOR


def data_key(app: str, scope: str, key: str) -> str:
    """The Redis key of the data-layer value ``key`` of ``app`` in ``scope``."""
    return data_prefix(app, scope) + key


def data_acl_pattern(app: str) -> str:
    """The Redis ACL key pattern that grants ``app`` its own data and nothing else."""
    return SEPARATOR.join((PREFIX, "data", app, "*"))


# -- the local bus (decision 0004; Java builds the same names in dev.sand.bus.Queues) ---


def queue_key(app: str, grain: str) -> str:
    """A grain's local queue (list; LPUSH in, BRPOP out)."""
    return SEPARATOR.join((PREFIX, "q", app, grain))


def agent_key(host: str) -> str:
    """The host agent's queue: backup copies, results, invocation copies."""
    return SEPARATOR.join((PREFIX, "agent", host))


def reply_key(frontend: str) -> str:
    """Results for the synchronous callers of one frontend."""
    return SEPARATOR.join((PREFIX, "reply", frontend))


def result_key(execution_id: str) -> str:
    """An execution's final result document (JSON)."""
    return SEPARATOR.join((PREFIX, "result", execution_id))


def timers_key() -> str:
    """Workflow timers (sorted set; score = due epoch ms)."""
    return SEPARATOR.join((PREFIX, "timers"))


def app_key(app: str) -> str:
    """A deployed application's metadata (JSON)."""
    return SEPARATOR.join((PREFIX, "app", app))


def ready_key(app: str, grain: str) -> str:
    """Set by a grain worker while it is ready to take events."""
    return SEPARATOR.join((PREFIX, "ready", app, grain))


def join_key(app: str, group_id: str) -> str:
    """One group (Parallel, Map, native join) of the workflow engine's store (hash)."""
    return SEPARATOR.join((PREFIX, "join", app, group_id))
