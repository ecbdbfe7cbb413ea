"""Where an application's grains run: the ``placement`` of ``app.yaml`` (decision 0013).

::

    placement:
      hosts: [host-1, host-2]     # the hosts that run the app; default: every host
      grains:                     # pinned grains; a grain not listed runs on every host
        resize: [host-2]          #   of the app

Nothing set keeps SAND's default: every grain on every host, so a whole workflow stays
on the local bus of the host that took the invocation. A hop to a grain that is not
placed on the current host goes through that grain's Kafka topic.

The hosts a cluster has are known only where the app is deployed (the host agent passes
them); without them, the structure, the grain names and the group rule are checked, and
"every host" stays symbolic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sand_workflows.colocation import colocations

from sand import contracts

HOSTS = "hosts"
GRAINS = "grains"
_FIELDS = (HOSTS, GRAINS)

# (field, rule): one broken rule, the field as the user wrote it ("placement.grains.resize")
Report = Callable[[str, str], None]


@dataclass(frozen=True, slots=True)
class Placement:
    """An application's placement. ``hosts`` None means every host of the cluster;
    ``grains`` holds the pinned grains only. Immutable."""

    hosts: tuple[str, ...] | None = None
    grains: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def is_default(self) -> bool:
        return self.hosts is None and not self.grains

    def hosts_of(self, grain: str) -> frozenset[str] | None:
        """The hosts that run ``grain``; None means every host of the cluster."""
        pinned = self.grains.get(grain)
        if pinned is not None:
            return frozenset(pinned)
        return None if self.hosts is None else frozenset(self.hosts)

    def resolve(self, grains: Sequence[str], cluster_hosts: Sequence[str]) -> dict[str, Any]:
        """The placement with every host named: ``{"hosts": [...], "grains": {grain: [...]}}``
        for every grain, hosts in cluster order (what the host agents act on)."""

        def ordered(hosts: frozenset[str] | None) -> list[str]:
            return [h for h in cluster_hosts if hosts is None or h in hosts]

        app_hosts = None if self.hosts is None else frozenset(self.hosts)
        return {
            HOSTS: ordered(app_hosts),
            GRAINS: {grain: ordered(self.hosts_of(grain)) for grain in grains},
        }

    def to_json(self) -> dict[str, Any]:
        """As written in ``app.yaml`` (unset fields left out)."""
        doc: dict[str, Any] = {}
        if self.hosts is not None:
            doc[HOSTS] = list(self.hosts)
        if self.grains:
            doc[GRAINS] = {g: list(h) for g, h in self.grains.items()}
        return doc


def check_placement(
    value: Any,
    grains: Sequence[str],
    workflows: Mapping[str, Any],
    cluster_hosts: Sequence[str] | None,
    report: Report,
) -> Placement:
    """The placement ``value`` (the YAML/JSON object) of an app with ``grains`` and
    ``workflows`` (name -> compiled ``sand_workflows`` Workflow). Every broken rule goes to
    ``report``; the returned placement is then the default and must not be used.
    ``cluster_hosts`` None skips the check of host names against the cluster."""
    if value is None:
        return Placement()
    if not isinstance(value, dict):
        fields = " and/or ".join(_FIELDS)
        report("placement", f"must be a mapping of {fields}, got {kind_of(value)}")
        return Placement()
    problems: list[tuple[str, str]] = []

    def note(field_name: str, rule: str) -> None:
        problems.append((field_name, rule))

    for key in value:
        if key not in _FIELDS:
            note(f"placement.{key}", f"unknown field (allowed: {', '.join(_FIELDS)})")
    hosts = None
    if HOSTS in value:
        hosts = _host_list(f"placement.{HOSTS}", value[HOSTS], cluster_hosts, note)
    pinned: dict[str, tuple[str, ...]] = {}
    section = value.get(GRAINS)
    if section is not None and not isinstance(section, dict):
        note(
            f"placement.{GRAINS}",
            f"must be a mapping of grain -> list of hosts, got {kind_of(section)}",
        )
    elif section is not None:
        for grain, grain_hosts in section.items():
            field_name = f"placement.{GRAINS}.{grain}"
            if grain not in grains:
                note(
                    field_name, f"'{grain}' is not a grain of the app (grains: {', '.join(grains)})"
                )
                continue
            checked = _host_list(field_name, grain_hosts, cluster_hosts, note)
            if checked is None:
                continue
            outside = [h for h in checked if hosts is not None and h not in hosts]
            if outside:
                note(
                    field_name,
                    f"host(s) {', '.join(outside)} do not run the app "
                    f"(placement.{HOSTS}: {', '.join(hosts or ())})",
                )
                continue
            pinned[grain] = checked
    for field_name, rule in problems:
        report(field_name, rule)
    if problems:
        return Placement()
    placement = Placement(hosts, MappingProxyType(pinned))
    _check_groups(placement, grains, workflows, cluster_hosts, report)
    return placement


def _check_groups(
    placement: Placement,
    grains: Sequence[str],
    workflows: Mapping[str, Any],
    cluster_hosts: Sequence[str] | None,
    report: Report,
) -> None:
    """Refuses a placement that splits grains sharing a group's state (known limitation:
    the group lives in one host's Redis, see ``sand_workflows.colocation``)."""
    if placement.is_default:
        return

    def hosts_of(grain: str) -> frozenset[str] | None:
        hosts = placement.hosts_of(grain)
        if hosts is None and cluster_hosts is not None:
            return frozenset(cluster_hosts)
        return hosts

    for name, workflow in workflows.items():
        for group in colocations(workflow, grains):
            if len({hosts_of(g) for g in group.grains}) <= 1:
                continue
            where = ", ".join(f"{g} on {_shown(hosts_of(g))}" for g in group.grains)
            if group.state is None:
                rule = (
                    f"workflow '{name}' fans out (its end guard and joins live on one host): "
                    f"all its grains must be placed on the same hosts; got {where}"
                )
            else:
                rule = (
                    f"workflow '{name}': grains inside the Parallel/Map state '{group.state}' "
                    f"and the grain before it must be placed on the same hosts; got {where}"
                )
            report(f"placement.{GRAINS}", rule)


def _host_list(
    field_name: str, value: Any, cluster_hosts: Sequence[str] | None, note: Report
) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not value:
        note(field_name, f"must be a non-empty list of host ids, got {kind_of(value)}")
        return None
    ok = True
    for host in value:
        if not isinstance(host, str) or not contracts.HOST_ID.fullmatch(host):
            note(field_name, f"{kind_of(host)} is not a host id ({contracts.HOST_ID.pattern})")
            ok = False
        elif cluster_hosts is not None and host not in cluster_hosts:
            note(
                field_name,
                f"unknown host '{host}' (the cluster's hosts: {', '.join(cluster_hosts)})",
            )
            ok = False
    if ok and len(set(value)) != len(value):
        note(field_name, f"lists a host twice: {value}")
        ok = False
    return tuple(value) if ok else None


def _shown(hosts: frozenset[str] | None) -> str:
    return "every host" if hosts is None else "[" + ", ".join(sorted(hosts)) + "]"


def kind_of(value: Any) -> str:
    """What a manifest value is, for error messages ("a mapping", "an empty list", ...)."""
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "an empty list" if not value else "a list"
    return f"{type(value).__name__} {value!r}"
