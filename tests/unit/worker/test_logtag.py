"""A grain's printed lines carry its execution and grain (what the GUI's state logs find)."""

from __future__ import annotations

import io
import logging
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


def test_loggerRecordsAtInfo_andATraceback_carryTheSameTags(capsys: object) -> None:
    """Issue 24: on the cluster ``context.logger.info`` was dropped (no handler: Python's last
    resort shows WARNING and above), and a grain's traceback was printed with ``execution=``
    on its first line only. Both now carry the tags of a print, on every line."""
    from sand.grain.context import GRAIN_LOGGER, grain_logger, log_grains_to_stderr
    from sand_worker.logtag import tagged

    parent = logging.getLogger(GRAIN_LOGGER)
    saved = (parent.level, list(parent.handlers))
    try:
        parent.handlers[:] = []  # as in a fresh grain worker (an emulator test may have set one)
        log_grains_to_stderr("level=%(levelname)s %(message)s", logging.INFO)
        logger = grain_logger("exec-7", "shop", "price")
        with tagged_output("exec-7", "price"):
            logger.info("pricing %s", "b")
            logger.debug("not at INFO")
            logger.setLevel(logging.DEBUG)  # a level the grain sets is the level
            logger.debug("now at DEBUG")
        print(
            tagged(
                "exec-7",
                "price",
                "error=ValueError\nTraceback (most recent call last):\n"
                '  File "x.py", line 1\nValueError: no price\n',
            ),
            file=sys.stderr,
        )
    finally:
        parent.setLevel(saved[0])
        parent.handlers[:] = saved[1]
    lines = capsys.readouterr().err.splitlines()  # type: ignore[attr-defined]
    tag = "execution_id=exec-7 grain=price "
    assert lines == [
        tag + "level=INFO pricing b",
        tag + "level=DEBUG now at DEBUG",
        tag + "error=ValueError",
        tag + "Traceback (most recent call last):",
        tag + '  File "x.py", line 1',
        tag + "ValueError: no price",
    ]


def test_aTaskInAMapItem_tagsItsPath_asOneWord(capsys: object) -> None:
    """Issue 24: one Map item's log panel showed its siblings' lines, all tagged alike. A
    task inside a Parallel branch or Map item now tags where it ran (``history.path_of``),
    as one word whatever the state's name holds; a top-level task tags no path."""
    from sand_worker.logtag import line_prefix, path_tag

    with tagged_output("exec-3", "price", "Price Items[1]"):
        print("item b")
    with tagged_output("exec-3", "price", ""):
        print("top")
    assert capsys.readouterr().out.splitlines() == [  # type: ignore[attr-defined]
        "execution_id=exec-3 grain=price path=Price%20Items[1] item b",
        "execution_id=exec-3 grain=price top",
    ]
    assert path_tag("Outer[0]/a%b\tc[2]") == "Outer[0]/a%25b%09c[2]"
    assert line_prefix("e", "g", "M[0]") == "execution_id=e grain=g path=M[0] "
