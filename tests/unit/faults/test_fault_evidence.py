"""The fault tests' own proof (tests/faults/load.py): which executions a fault hit, on which
host, whether their work went on, and the most runs of one grain, from run lines as the
fault apps print them in each host's app log."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.faults.load import Accepted, Fault, Struck, evidence, read_runs, recovery

KILL_S = 1_000.0  # the fault, epoch s
BEFORE_MS = 999_500
AFTER_MS = 1_002_000


def _log(path: Path, *lines: str) -> Path:
    path.write_text("".join(f"execution_id=x grain=y {line}\n" for line in lines))
    return path


def test_evidence_countsInFlightOnTheVictim_andWhatWentOnAfter(tmp_path: Path) -> None:
    logs = {
        "host-1": _log(
            tmp_path / "h1.log",
            f"SAND-RUN a first 11 {BEFORE_MS}",  # a: in flight on the victim, replayed on host-2
            f"SAND-RUN c first 12 {BEFORE_MS}",  # c: ended before the kill
            f"SAND-RUN d first 13 {BEFORE_MS}",  # d: on the victim, never ran again
        ),
        "host-2": _log(
            tmp_path / "h2.log",
            f"SAND-RUN a first 21 {AFTER_MS}",
            f"SAND-RUN a second 22 {AFTER_MS}",
            f"SAND-RUN b first 23 {BEFORE_MS}",  # b: in flight on a survivor
        ),
    }
    runs = read_runs(logs)
    assert len(runs) == 6 and {r.host for r in runs} == {"host-1", "host-2"}
    accepted = [Accepted(e, i, KILL_S - 2) for i, e in enumerate("abcd")]
    accepted.append(Accepted("e", 4, KILL_S + 1))  # accepted after the kill: not in flight
    finished = {"a": AFTER_MS + 500, "b": AFTER_MS, "c": BEFORE_MS + 100, "d": AFTER_MS, "e": 0}
    fault = Fault(KILL_S, KILL_S + 0.1, Struck(hosts=("host-1",), pids=(11,)))

    proof = evidence(accepted, finished, runs, fault)

    assert (proof.in_flight, proof.on_victims, proof.resumed) == (3, 2, 1)
    assert proof.most_runs == 2 and proof.most_run == ("a", "first")  # host-1, then host-2
    # the steady latency is c's (accepted at 998 s, ended at 999.6 s): 1.6 s; a, in flight on
    # the victim, ended at 1002.5 s instead of 999.6 s
    assert proof.added_s == pytest.approx(2.9)


def test_evidence_ofAFaultThatTookNoHost_hasNoVictims(tmp_path: Path) -> None:
    runs = read_runs({"host-1": _log(tmp_path / "h1.log", f"SAND-RUN a first 1 {BEFORE_MS}")})
    fault = Fault(KILL_S, KILL_S + 5, Struck(pids=(7,)))  # a shared service restarted
    proof = evidence([Accepted("a", 0, KILL_S - 1)], {"a": AFTER_MS}, runs, fault)
    assert (proof.in_flight, proof.on_victims, proof.resumed, proof.most_runs) == (1, 0, 0, 1)
    assert proof.added_s is None  # no host was taken down


def test_evidence_ignoresOtherExecutionsRuns_andLinesOfAnOtherShape(tmp_path: Path) -> None:
    log = _log(
        tmp_path / "h1.log",
        f"SAND-RUN zz first 1 {BEFORE_MS}",
        f"SAND-RUN zz first 2 {AFTER_MS}",
        "SAND-RUN a first 3",  # no time: a line of an older app version
    )
    proof = evidence([], {}, read_runs({"host-1": log}), Fault(KILL_S, KILL_S, Struck()))
    assert proof.most_runs == 0 and proof.in_flight == 0


def test_recovery_countsEachHostsTakeOvers_afterTheFaultOnly(tmp_path: Path) -> None:
    def line(seconds: float, msg: str) -> str:
        at = datetime.fromtimestamp(KILL_S + seconds, UTC).isoformat().replace("+00:00", "Z")
        return f'ts={at} level=INFO msg="{msg}" app=relay\n'

    (tmp_path / "h2.log").write_text(
        line(-3, "replayed an event of a lost host")  # an earlier fault's
        + line(2.5, "partitions assigned")
        + line(3.0, "replayed an event of a lost host")
        + line(3.5, "delivered an event a lost host never took")
    )
    (tmp_path / "h3.log").write_text(
        line(4.0, "replayed an event of a lost host")
        + line(4.2, "skipped an event of a lost host: its execution has ended")
    )
    logs = {h: tmp_path / f"h{h[-1]}.log" for h in ("host-1", "host-2", "host-3")}

    found = recovery(logs, KILL_S)

    assert found.taken_over == {"host-1": 0, "host-2": 2, "host-3": 1}
    assert (found.moved_s, found.first_taken_s, found.last_taken_s) == (2.5, 3.0, 4.0)
    assert found.skipped == 1  # a skip is neither a replay nor a delivery
    assert "events taken over 3" in str(found) and "skipped as ended 1" in str(found)
