"""The Helm chart lints and renders as deploy/helm/check.sh checks it.

Integration-marked: without a helm on PATH or in ~/.cache/sand/tools (`make setup` builds one
there, beside its other steps), check.sh builds one from the Go module proxy first (about
2 minutes on a 2-core machine, once per machine), which a unit run must not do.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.integration
@pytest.mark.timeout(1200)
def test_chart_lints_renders_and_verifies() -> None:
    """`helm lint --strict`, four rendered variants, the values schema and the rendered kinds."""
    done = subprocess.run(
        ["bash", str(ROOT / "deploy" / "helm" / "check.sh")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1150,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "chart checked" in done.stdout
    for variant in ("default", "operators", "dind", "process"):
        assert (ROOT / "build" / "chart" / f"{variant}.yaml").stat().st_size > 0
