"""The gateway's nginx configuration as `sand up` renders it (decision 0024)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from sand.cluster.config import ClusterConfig, load_config
from sand.cluster.services import build_services


def _rendered(tmp_path: Path, **frontend: object) -> tuple[ClusterConfig, str]:
    config = load_config(
        env={},
        overrides={"cluster": {"state_dir": str(tmp_path / "state")}, "frontend": frontend},
    )
    nginx = next(s for s in build_services(config) if s.name == "nginx")
    assert nginx.prepare is not None
    nginx.prepare()
    return config, (config.conf_dir / "nginx.conf").read_text()


def test_nginx_neverMarksAFrontendDown_andRetriesOnlyUnsentRequests(tmp_path: Path) -> None:
    """Every frontend is an upstream with max_fails=0; only connection errors move a request."""
    config, conf = _rendered(tmp_path)
    servers = re.findall(r"server 127\.0\.0\.1:(\d+) max_fails=0;", conf)
    assert [int(p) for p in servers] == list(config.ports.frontends)
    assert "fail_timeout" not in conf
    assert "proxy_next_upstream error timeout;" in conf
    assert re.search(r"proxy_next_upstream [^;]*non_idempotent", conf) is None


def test_nginx_bodyLimits_matchWhatTheFrontendsAccept(tmp_path: Path) -> None:
    """Invocations are limited (and held in memory) at the frontends' max_payload_kb; archives
    at the agent's 64 MiB; bodies are buffered before a frontend sees them; timeouts cut slow
    clients off."""
    _, conf = _rendered(tmp_path, max_payload_kb=96)
    invoke = conf[conf.index("location ~ ^/v1/apps/[^/]+/invoke$") :]
    assert "client_max_body_size 96k;" in invoke.split("}")[0]
    assert "client_body_buffer_size 96k;" in invoke.split("}")[0]
    archive = conf[conf.index("location = /v1/apps") :].split("}")[0]
    assert "client_max_body_size 64m;" in archive
    assert "proxy_request_buffering on;" in conf
    assert "proxy_request_buffering off" not in conf
    assert "client_header_timeout 10s;" in conf and "client_body_timeout 10s;" in conf


def test_nginx_acceptsTheRenderedConfiguration(tmp_path: Path) -> None:
    """`nginx -t` takes the file `sand up` writes, JSON error pages and all."""
    config, _ = _rendered(tmp_path)
    prefix = config.state_dir / "nginx"
    config.logs_dir.mkdir(parents=True, exist_ok=True)
    config.run_dir.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["nginx", "-t", "-p", str(prefix), "-c", str(config.conf_dir / "nginx.conf")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
