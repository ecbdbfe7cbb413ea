"""Parallel and Map runs: open a group in the store, start branches or items, complete.

A run of a Parallel or Map state is a store group of one slot per branch or item; its
parent is a ``Token`` of kind GROUP holding the state's raw input, retry counts and
lineage (and for Map the selected items). The call that fills the last slot continues
the state; the first unhandled branch error closes the group and goes through the
state's Retry/Catch. Map claims MaxConcurrency items at entry and one more each time an
item finishes, so no more than MaxConcurrency iterations are ever outstanding.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from . import errors, history
from .actions import Action, Failed, Finished
from .dataflow import (
    arguments,
    effective_input,
    find,
    finish_result,
    input_path,
    jsonata_states,
    jsonata_whole_number,
    payload,
    whole_number,
)
from .errors import StatesError
from .model import MapState, ParallelState, RecoverableState
from .paths import json_kind
from .steps import Done, Entry, Goto, Step
from .tokens import Frame, Lineage, Token, TokenKind, decode_token, dumps, encode_token

if TYPE_CHECKING:
    from .engine import Engine


class GroupRunner:
    """The fan-out half of ``Engine``: it drives branches through the engine it serves."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.store = engine.store

    def enter_parallel(self, st: ParallelState, entry: Entry) -> Step:
        lin = entry.lineage
        if st.jsonata:
            eff = arguments(st, entry.raw_input, entry.context, lin)
        else:
            eff = effective_input(st, entry.raw_input, entry.context)
        gid = lin.group_id(st.name)
        kept = _in_range(entry.kept, len(st.branches))
        history.emit("ParallelStarted", lin, st.name, branches=len(st.branches), **_noted(kept))
        self.store.open_group(gid, len(st.branches), _parent(st, entry, ()))
        if kept and (done := self._keep(gid, kept)) is not None:
            return done
        actions: list[Action] = []
        started = False
        for i, start in enumerate(st.branches):
            if i in kept:
                continue
            if started and not self.store.is_open([gid]):
                break  # an earlier branch already failed the group
            started = True
            actions += self.engine.drive(Goto(start, eff, lin.child(Frame(gid, i))))
        return Done(actions)

    def enter_map(self, st: MapState, entry: Entry) -> Step:
        raw, lin, ctx = entry.raw_input, entry.lineage, entry.context
        selected, limit = (
            self._jsonata_items(st, entry) if st.jsonata else self._jsonpath_items(st, entry)
        )
        kept = _in_range(entry.kept, len(selected))
        history.emit("MapStarted", lin, st.name, items=len(selected), **_noted(kept))
        if not selected:
            out, after = finish_result(st, raw, [], ctx, lin)
            return self.engine.after(st, out, after)
        gid = lin.group_id(st.name)
        # Claims count 0, 1, 2, ...; with items kept they name the slots still to run.
        pending = tuple(i for i in range(len(selected)) if i not in kept) if kept else ()
        parent = _parent(st, entry, tuple(selected), pending)
        self.store.open_group(gid, len(selected), parent)
        if kept and (done := self._keep(gid, kept)) is not None:
            return done
        claim = self.store.claim_items(gid, limit or len(selected))
        actions: list[Action] = []
        for i in _slots(claim.indices if claim else (), pending):
            if not self.store.is_open([gid]):
                break
            actions += self._start_item(
                st, Frame(gid, i, claims_next=bool(limit)), selected[i], lin
            )
        return Done(actions)

    def _keep(self, gid: str, kept: dict[int, Any]) -> Step | None:
        """Fill the slots of a redrive's group whose outputs it keeps; the state's
        continuation when that filled the last one (every branch or item had succeeded)."""
        for slot, output in sorted(kept.items()):
            outcome = self.store.record_result(gid, slot, dumps(output))
            if outcome.completed:
                assert outcome.parent is not None
                return self._complete(outcome.parent, outcome.results)
        return None

    def _jsonpath_items(self, st: MapState, entry: Entry) -> tuple[list[Any], int]:
        """The items (ItemsPath, then ItemSelector) and MaxConcurrency of a JSONPath Map."""
        ctx = entry.context
        eff = input_path(st, entry.raw_input, ctx)
        items = find(st.items_path, eff, ctx, "ItemsPath", st)
        if not isinstance(items, list):
            raise StatesError(
                errors.RUNTIME,
                f"state '{st.name}': ItemsPath '{st.items_path.text}' must select an array,"
                f" got {json_kind(items)}",
            )
        limit = st.max_concurrency
        if st.max_concurrency_path is not None:
            limit = whole_number(st.max_concurrency_path, eff, ctx, "MaxConcurrencyPath", st, 0)
        if st.item_selector is None:
            return list(items), limit
        selector = st.item_selector
        return [
            payload(selector, eff, ctx.for_item(i, value)) for i, value in enumerate(items)
        ], limit

    def _jsonata_items(self, st: MapState, entry: Entry) -> tuple[list[Any], int]:
        """The items (Items, then ItemSelector) and MaxConcurrency of a JSONata Map."""
        raw, ctx, variables = entry.raw_input, entry.context, entry.lineage.variables
        states = jsonata_states(raw, ctx)
        items = raw if st.items is None else st.items.evaluate(st.name, "Items", states, variables)
        if not isinstance(items, list):
            raise StatesError(
                errors.QUERY_EVALUATION_ERROR,
                f"state '{st.name}': Items must be an array, got {json_kind(items)}",
            )
        limit = st.max_concurrency
        if st.max_concurrency_template is not None:
            limit = jsonata_whole_number(
                st.max_concurrency_template, st, "MaxConcurrency", states, 0
            )
        template = st.item_template
        if template is None:
            return list(items), limit
        return [
            template.evaluate(
                st.name, "ItemSelector", jsonata_states(raw, ctx.for_item(i, value)), variables
            )
            for i, value in enumerate(items)
        ], limit

    def _start_item(self, st: MapState, frame: Frame, item: Any, lin: Lineage) -> list[Action]:
        assert st.processor is not None
        return self.engine.drive(Goto(st.processor, item, lin.child(frame)))

    def finish(self, lin: Lineage, output: Any) -> Step:
        """A branch (or the execution) reached its end with ``output``."""
        if not lin.frames:
            history.emit("ExecutionSucceeded", lin, None, output=output)
            return Done([Finished(output)])
        history.emit("BranchSucceeded", lin, None, output=output)
        frame = lin.frames[-1]
        outcome = self.store.record_result(frame.group_id, frame.slot, dumps(output))
        if outcome.completed:
            assert outcome.parent is not None
            return self._complete(outcome.parent, outcome.results)
        if outcome.accepted and frame.claims_next:
            claim = self.store.claim_items(frame.group_id, 1)
            if claim and claim.indices:
                parent = decode_token(claim.parent)
                st = self.engine.state_named(parent.state, MapState)
                actions: list[Action] = []
                for i in _slots(claim.indices, parent.pending):
                    item_frame = Frame(frame.group_id, i, claims_next=True)
                    actions += self._start_item(st, item_frame, parent.items[i], parent.lineage)
                return Done(actions)
        return Done([])

    def _complete(self, parent_json: str, results: Sequence[str]) -> Step:
        parent = decode_token(parent_json)
        st = self.engine.state_named(parent.state, RecoverableState)
        lin, raw, rc = parent.lineage, parent.raw_input, parent.retry_counts
        ctx = self.engine.context(lin, st, parent.entered_time, rc)
        try:
            out, after = finish_result(st, raw, [json.loads(r) for r in results], ctx, lin)
        except StatesError as exc:
            return self.engine.state_error(st, raw, lin, rc, exc)
        return self.engine.after(st, out, after)

    def raise_error(self, lin: Lineage, error: str, cause: str) -> Step:
        """An unhandled error leaves the current scope: fail the execution or the group."""
        if not lin.frames:
            history.emit("ExecutionFailed", lin, None, error=error, cause=cause)
            return Done([Failed(error, cause)])
        history.emit("BranchFailed", lin, None, error=error, cause=cause)
        parent_json = self.store.close_group(lin.frames[-1].group_id)
        if parent_json is None:
            return Done([])  # the group already failed or finished: this error is late
        parent = decode_token(parent_json)
        st = self.engine.state_named(parent.state, RecoverableState)
        # Spec "Parallel State"/"Map State": the state fails with the branch's error.
        return self.engine.state_error(
            st, parent.raw_input, parent.lineage, parent.retry_counts, StatesError(error, cause)
        )


def _in_range(kept: Mapping[int, Any], size: int) -> dict[int, Any]:
    """The kept outputs of a redrive whose slots the state still has (a redeploy may have
    changed the number of branches, or the items selected)."""
    return {slot: output for slot, output in kept.items() if 0 <= slot < size}


def _noted(kept: dict[int, Any]) -> dict[str, Any]:
    """The ParallelStarted/MapStarted field naming the kept slots, if any."""
    return {"kept": sorted(kept)} if kept else {}


def _slots(claimed: Sequence[int], pending: tuple[int, ...]) -> Iterator[int]:
    """The slots that claims ``claimed`` start: themselves, or with ``pending`` (a redrive
    kept some items) the pending slot each names; a claim past the last names none."""
    for i in claimed:
        if not pending:
            yield i
        elif i < len(pending):
            yield pending[i]


def _parent(
    st: RecoverableState, entry: Entry, items: tuple[Any, ...], pending: tuple[int, ...] = ()
) -> str:
    """The group's parent: the continuation of the Parallel/Map state that opened it."""
    token = Token(
        kind=TokenKind.GROUP,
        state=st.name,
        lineage=entry.lineage,
        entered_time=entry.entered_time,
        raw_input=entry.raw_input,
        retry_counts=entry.retry_counts,
        items=items,
        pending=pending,
    )
    return encode_token(token)
