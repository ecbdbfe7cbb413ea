"""A grain's printed lines carry its execution and grain (what the GUI's state logs find)."""

from __future__ import annotations

import io
import sys

from sand_worker.logtag import LineTagger, tagged_output


def test_everyLine_getsThePrefix_evenWhenWrittenInPieces() -> None:
    target = io.StringIO()
    tagger = LineTagger(target, "execution_id=e1 grain=g ")
    tagger.write("one\ntw")
    tagger.write("o\n")
    tagger.write("three")
    tagger.end_line()
    assert target.getvalue() == (
        "execution_id=e1 grain=g one\nexecution_id=e1 grain=g two\nexecution_id=e1 grain=g three\n"
    )


def test_printInside_isTagged_andOutsideIsNot(capsys: object) -> None:
    before_out, before_err = sys.stdout, sys.stderr
    with tagged_output("exec-9", "greet"):
        print("hello")
        print("oops", file=sys.stderr, end="")
    print("after")
    assert (sys.stdout, sys.stderr) == (before_out, before_err)
    captured = capsys.readouterr()  # type: ignore[attr-defined]
    assert captured.out == "execution_id=exec-9 grain=greet hello\nafter\n"
    assert captured.err == "execution_id=exec-9 grain=greet oops\n"
