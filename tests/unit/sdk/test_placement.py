"""The placement of app.yaml (decision 0013): accepted when sound, each bad input refused with
the file, the field and the value; groups are never split across hosts."""

# The table of bad inputs reads best with each message whole on its line.
# ruff: noqa: E501

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sand.app import DEPLOY_REQUEST, AppError, load_app
from sand.placement import Placement

from .conftest import ECHO_GRAIN, AppFactory

HOSTS = ["host-1", "host-2", "host-3"]
CHAIN = """\
StartAt: A
States:
  A: {Type: Task, Resource: first, Next: B}
  B: {Type: Task, Resource: middle, Next: C}
  C: {Type: Task, Resource: last, End: true}
"""
PARALLEL = """\
StartAt: A
States:
  A: {Type: Task, Resource: first, Next: Fan}
  Fan:
    Type: Parallel
    Next: C
    Branches:
      - StartAt: B
        States:
          B: {Type: Task, Resource: middle, End: true}
      - StartAt: P
        States:
          P: {Type: Pass, End: true}
  C: {Type: Task, Resource: last, End: true}
"""
FAN_OUT = """\
entry: first
exit: last
grains:
  first: {next: [middle, last]}
  middle: {}
  last: {}
"""


def app_with(make_app: AppFactory, placement: str, workflow: str = CHAIN) -> Path:
    app_yaml = (
        "name: chain\n"
        "grains:\n  first: g/first.py\n  middle: g/middle.py\n  last: g/last.py\n"
        "workflows:\n  main: wf/main.yaml\n" + placement
    )
    files = {f"g/{n}.py": ECHO_GRAIN for n in ("first", "middle", "last")}
    return make_app(app_yaml, {**files, "wf/main.yaml": workflow})


def problems(root: Path, **kwargs: Any) -> list[str]:
    with pytest.raises(AppError) as info:
        load_app(root, **kwargs)
    return [str(p) for p in info.value.problems]


def test_noPlacement_isTheDefault_everyGrainOnEveryHost(make_app: AppFactory) -> None:
    """Without placement every grain runs on every host of the cluster."""
    app = load_app(app_with(make_app, ""), cluster_hosts=HOSTS)
    assert app.placement == Placement()
    resolved = app.placement.resolve(list(app.grains), HOSTS)
    assert resolved == {"hosts": HOSTS, "grains": {g: HOSTS for g in app.grains}}


def test_hostsAndPinnedGrain_resolveInClusterOrder(make_app: AppFactory) -> None:
    """Unlisted grains run on the app's hosts; a pinned grain on its own hosts only."""
    root = app_with(
        make_app, "placement:\n  hosts: [host-2, host-1]\n  grains:\n    middle: [host-2]\n"
    )
    app = load_app(root, cluster_hosts=HOSTS)
    assert app.placement.resolve(list(app.grains), HOSTS) == {
        "hosts": ["host-1", "host-2"],
        "grains": {
            "first": ["host-1", "host-2"],
            "middle": ["host-2"],
            "last": ["host-1", "host-2"],
        },
    }


@pytest.mark.parametrize(
    ("placement", "expected"),
    [
        ("placement: [host-1]\n", "placement: must be a mapping of hosts and/or grains, got a list"),
        ("placement:\n  where: x\n", "placement.where: unknown field (allowed: hosts, grains)"),
        ("placement:\n  hosts: []\n", "placement.hosts: must be a non-empty list of host ids, got an empty list"),
        ("placement:\n  hosts: host-1\n", "placement.hosts: must be a non-empty list of host ids, got str 'host-1'"),
        ("placement:\n  hosts: [7]\n", "placement.hosts: int 7 is not a host id"),
        ("placement:\n  hosts: [host-1, host-1]\n", "placement.hosts: lists a host twice: ['host-1', 'host-1']"),
        ("placement:\n  grains: [middle]\n", "placement.grains: must be a mapping of grain -> list of hosts, got a list"),
        ("placement:\n  grains:\n    resize: [host-1]\n", "placement.grains.resize: 'resize' is not a grain of the app (grains: first, middle, last)"),
        ("placement:\n  grains:\n    middle: []\n", "placement.grains.middle: must be a non-empty list of host ids, got an empty list"),
        ("placement:\n  grains:\n    middle: {host-1: 1}\n", "placement.grains.middle: must be a non-empty list of host ids, got a mapping"),
        ("placement:\n  hosts: [host-1]\n  grains:\n    middle: [host-2]\n", "placement.grains.middle: host(s) host-2 do not run the app (placement.hosts: host-1)"),
    ],
)  # fmt: skip
def test_badPlacement_isRefused_namingFileFieldAndValue(
    make_app: AppFactory, placement: str, expected: str
) -> None:
    """Each wrong type, empty list, unknown field or unknown grain is one clear problem."""
    root = app_with(make_app, placement)
    found = problems(root)
    assert len(found) == 1, found
    assert found[0].startswith(f"{root}/app.yaml: {expected}"), found


def test_unknownHost_isRefused_whenTheClusterIsKnown(make_app: AppFactory) -> None:
    """A host the cluster does not have is named, with the hosts it has."""
    root = app_with(make_app, "placement:\n  hosts: [host-1, host-9]\n")
    assert problems(root, cluster_hosts=HOSTS) == [
        f"{root}/app.yaml: placement.hosts: unknown host 'host-9' "
        "(the cluster's hosts: host-1, host-2, host-3)"
    ]
    # without the cluster (sand validate), host names are only checked for their form
    assert load_app(root).placement.hosts == ("host-1", "host-9")


def test_overrideFromDeploy_replacesManifest_andIsLocatedInTheRequest(
    make_app: AppFactory,
) -> None:
    """A placement given at deploy replaces app.yaml's; its problems name the deploy request."""
    root = app_with(make_app, "placement:\n  hosts: [host-1]\n")
    app = load_app(root, cluster_hosts=HOSTS, placement={"hosts": ["host-3"]})
    assert app.placement.hosts == ("host-3",)
    assert problems(root, cluster_hosts=HOSTS, placement={"grains": {"middle": "host-2"}}) == [
        f"{DEPLOY_REQUEST}: placement.grains.middle: must be a non-empty list of host ids, "
        "got str 'host-2'"
    ]


def test_parallelSplitAcrossHosts_isRefused_namingStateAndGrains(make_app: AppFactory) -> None:
    """A grain inside a Parallel pinned away from the grain before it would split the group."""
    root = app_with(make_app, "placement:\n  grains:\n    middle: [host-2]\n", PARALLEL)
    assert problems(root, cluster_hosts=HOSTS) == [
        f"{root}/app.yaml: placement.grains: workflow 'main': grains inside the Parallel/Map "
        "state 'Fan' and the grain before it must be placed on the same hosts; got first on "
        "[host-1, host-2, host-3], middle on [host-2]"
    ]


def test_parallelOnSameHosts_andGrainAfterElsewhere_isAccepted(make_app: AppFactory) -> None:
    """The grain after a Parallel is not part of its group: it may run elsewhere."""
    root = app_with(
        make_app,
        "placement:\n  hosts: [host-1, host-2]\n  grains:\n    last: [host-2]\n",
        PARALLEL,
    )
    assert load_app(root, cluster_hosts=HOSTS).placement.grains == {"last": ("host-2",)}


def test_groupCheck_resolvesEveryHost_whenTheClusterIsKnown(make_app: AppFactory) -> None:
    """Pinning a group's grain to every host of the cluster equals not pinning it."""
    root = app_with(
        make_app, "placement:\n  grains:\n    middle: [host-1, host-2, host-3]\n", PARALLEL
    )
    load_app(root, cluster_hosts=HOSTS)
    # without the cluster, "every host" is unknown: the same placement cannot be proven sound
    assert len(problems(root)) == 1


def test_nativeFanOutSplitAcrossHosts_isRefused(make_app: AppFactory) -> None:
    """A native workflow that fans out keeps its end guard on one host: no split."""
    root = app_with(make_app, "placement:\n  grains:\n    last: [host-1]\n", FAN_OUT)
    (found,) = problems(root, cluster_hosts=HOSTS)
    assert "workflow 'main' fans out" in found and "last on [host-1]" in found


def test_chainSplitAcrossHosts_isAccepted(make_app: AppFactory) -> None:
    """A chain of Tasks has no group: any grain may be pinned anywhere."""
    root = app_with(
        make_app, "placement:\n  hosts: [host-1, host-2]\n  grains:\n    middle: [host-2]\n"
    )
    app = load_app(root, cluster_hosts=HOSTS)
    assert app.placement.hosts_of("middle") == frozenset({"host-2"})
    assert app.placement.hosts_of("first") == frozenset({"host-1", "host-2"})
