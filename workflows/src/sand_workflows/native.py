"""Running the SAND native format: grains, static and dynamic fan-out, joins, the end.

See workflows/README.md "SAND native format". A native execution has no Retry/Catch:
any grain failure fails it. After a fan-out the first Finished/Failed wins through the
end guard group in the store; joins collect their predecessors' outputs in a group.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from . import errors, history
from .actions import Action, Failed, Finished, TaskCall
from .dataflow import context_object, now_iso
from .model import GrainState, Workflow
from .store import ExecutionStore
from .tokens import Lineage, Token, TokenKind, dumps, encode_token, end_guard_id, join_group_id


class NativeRunner:
    """The native half of ``Engine``; holds no mutable state (see ``Engine``)."""

    def __init__(
        self, workflow: Workflow, store: ExecutionStore, clock: Callable[[], datetime]
    ) -> None:
        self.wf = workflow
        self.store = store
        self.clock = clock

    def start(self, lineage: Lineage, input: Any) -> list[Action]:
        if self.wf.concurrent:
            self.store.open_group(end_guard_id(lineage.execution.id), 1, "{}")
        return [self._call(self.wf.start_at, input, lineage)]

    def failed(self, token: Token, error: str, cause: str) -> list[Action]:
        return self._fail(token.lineage, error, cause)

    def succeeded(
        self, token: Token, output: Any, next_grains: Sequence[str] | None
    ) -> list[Action]:
        lin = token.lineage
        if self.wf.concurrent and not self.store.is_open([end_guard_id(lin.execution.id)]):
            return []
        st = self._grain(token.state)
        if st.potential_next:
            chosen = list(next_grains or [])
            wrong = [g for g in chosen if g not in st.potential_next]
            if wrong:
                return self._fail(
                    lin,
                    errors.RUNTIME,
                    f"grain '{st.name}' chose next grain(s) {', '.join(repr(g) for g in wrong)},"
                    f" which are not in its potentialNext ({', '.join(st.potential_next)})",
                )
        else:
            if next_grains:
                return self._fail(
                    lin,
                    errors.RUNTIME,
                    f"grain '{st.name}' chose next grain(s)"
                    f" {', '.join(repr(g) for g in next_grains)}"
                    " but declares no potentialNext",
                )
            chosen = list(st.next_grains)
        if st.name == self.wf.exit or (self.wf.exit is None and not chosen):
            if (
                self.wf.concurrent
                and self.store.close_group(end_guard_id(lin.execution.id)) is None
            ):
                return []
            return [Finished(output)]
        actions: list[Action] = []
        for target in chosen:
            actions += self._arrive(st.name, target, output, lin)
        for target in st.potential_next:
            if target not in chosen and self._grain(target).join:
                actions += self._arrive(st.name, target, None, lin, skipped=True)
        return actions

    def _grain(self, name: str) -> GrainState:
        st = self.wf.states.get(name)
        if not isinstance(st, GrainState):
            raise ValueError(f"token names '{name}', which is no grain of '{self.wf.name}'")
        return st

    def _call(self, grain: str, input: Any, lin: Lineage) -> TaskCall:
        st = self._grain(grain)
        ctx = context_object(self.wf, lin, st, now_iso(self.clock), ())
        token = encode_token(Token(kind=TokenKind.NATIVE, state=grain, lineage=lin))
        history.emit("TaskScheduled", lin, grain, grain=grain, input=input, timeout_s=st.timeout_s)
        return TaskCall(grain, input, token, st.timeout_s, ctx)

    def _fail(self, lin: Lineage, error: str, cause: str) -> list[Action]:
        if self.wf.concurrent and self.store.close_group(end_guard_id(lin.execution.id)) is None:
            return []
        return [Failed(error, cause)]

    def _arrive(
        self, source: str, target: str, output: Any, lin: Lineage, skipped: bool = False
    ) -> list[Action]:
        st = self._grain(target)
        if not st.join:
            return [self._call(target, output, lin)]
        gid = join_group_id(lin.execution.id, target)
        self.store.open_group(gid, len(st.predecessors), "{}")
        # A slot holds what one predecessor delivered, or marks that it chose another way.
        slot = dumps({"skipped": True} if skipped else {"output": output})
        outcome = self.store.record_result(gid, st.predecessors.index(source), slot)
        if not outcome.completed:
            return []
        arrived = [json.loads(r) for r in outcome.results]
        inputs = [r["output"] for r in arrived if "output" in r]
        if not inputs:
            return []  # every predecessor chose another way: the join does not run
        return [self._call(target, inputs, lin)]
