"""Decision 0036: sdk-python installs like a package. Into a fresh venv, with pip, from this
checkout's sdk-python alone, then used outside any checkout: the client and the emulator
work; `sand up` says it needs a checkout.

Needs PyPI (pip fetches setuptools and the dependencies): about 1-2 minutes. Starts no
cluster; the offline half of the proof is tests/unit/sdk/test_packaging.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.timeout(900)
def test_pipInstall_intoACleanVenv_givesAWorkingClientAndEmulator(tmp_path: Path) -> None:
    """`pip install ./sdk-python`, then `sand --help`, `sand init`, `sand
    validate`, `sand emulate` succeed from a folder outside the checkout, importing this
    wheel's sand_contracts; `sand up` exits 1 naming the missing checkout, no traceback."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    # nothing of the checkout's venv or sources on the path: only what pip installed
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "SAND_HOME", "SAND_CONFIG", "VIRTUAL_ENV")
    }
    env["PATH"] = f"{venv / 'bin'}:/usr/bin:/bin"
    env["SAND_STATE_DIR"] = str(tmp_path / "state")
    pip = _run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "-q",
            str(ROOT / "sdk-python"),
        ],
        tmp_path,
        env,
    )
    assert pip.returncode == 0, pip.stderr

    imported = _run(
        [str(venv / "bin" / "python"), "-c", "import sand_contracts as c; print(c.__file__)"],
        tmp_path,
        env,
    )
    assert imported.stdout.startswith(str(venv)), imported.stdout + imported.stderr

    sand = str(venv / "bin" / "sand")
    assert _run([sand, "--help"], tmp_path, env).returncode == 0
    init = _run([sand, "init", "demo", "--template", "asl"], tmp_path, env)
    assert init.returncode == 0, init.stderr
    demo = tmp_path / "demo"
    validate = _run([sand, "validate", "."], demo, env)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    emulate = _run([sand, "emulate", ".", "--input", '{"name": "ada"}'], demo, env)
    assert emulate.returncode == 0, emulate.stderr
    assert json.loads(emulate.stdout)["greeting"] == "Hello, Ada!"

    up = _run([sand, "up"], demo, env)
    assert up.returncode == 1, up.stdout + up.stderr
    assert "is not a SAND checkout" in up.stderr and "SAND_HOME" in up.stderr
    assert "Traceback" not in up.stderr
