"""The server side of the web GUI (issue 14) on the real stack: validation only
(``POST /v1/apps?dry_run=true``), a workflow's definition, the cluster view, and the
GUI's static files at ``/ui/`` (served by a frontend of the suite's cluster, and by an
extra frontend process of the same cluster whose ``frontend.ui_dir`` is a tiny fake
build made here)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from sand.client import SandClient, pack_app
from sand.cluster.bootstrap import admin_token
from sand.cluster.config import ClusterConfig
from sand.cluster.supervisor import Supervisor

from tests.integration.tenants import Tenant, make_tenant, renamed_app

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HELLO = EXAMPLES / "hello"
ASL = EXAMPLES / "asl-orders"
INDEX = "<!doctype html><title>SAND GUI</title><div id=root></div>"


@pytest.fixture(scope="module")
def admin(cluster: Supervisor, cluster_config: ClusterConfig) -> SandClient:
    return SandClient(cluster_config.gateway_url, token=admin_token(cluster_config), timeout_s=120)


@pytest.fixture(scope="module")
def alice(admin: SandClient, cluster_config: ClusterConfig) -> Tenant:
    return make_tenant(admin, cluster_config, "alice")


@pytest.fixture(scope="module")
def bob(admin: SandClient, cluster_config: ClusterConfig) -> Tenant:
    return make_tenant(admin, cluster_config, "bob")


@pytest.fixture(scope="module")
def alices_apps(
    alice: Tenant, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """examples/hello (native) and examples/asl-orders (ASL) under names of alice's own."""
    directory = tmp_path_factory.mktemp("apps")
    names = {"native": f"hello-{alice.name}", "asl": f"orders-{alice.name}"}
    alice.client.deploy(renamed_app(HELLO, names["native"], directory), backend="process")
    alice.client.deploy(renamed_app(ASL, names["asl"], directory), backend="process")
    yield names
    for name in names.values():
        alice.client.undeploy(name)


def _call(
    config: ClusterConfig, method: str, path: str, token: str | None, **kw: Any
) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    headers.update(kw.pop("headers", {}))
    return requests.request(
        method, config.gateway_url + path, headers=headers, timeout=60, allow_redirects=False, **kw
    )


def _dry_run(
    config: ClusterConfig, token: str, app_dir: Path, query: str = ""
) -> requests.Response:
    return _call(
        config,
        "POST",
        f"/v1/apps?dry_run=true{query}",
        token,
        data=pack_app(app_dir),
        headers={"Content-Type": "application/x-tar"},
    )


def _app_names(config: ClusterConfig, token: str) -> set[str]:
    answer = _call(config, "GET", "/v1/apps", token)
    assert answer.status_code == 200, answer.text
    return {app["name"] for app in answer.json()["apps"]}


def _broken_hello(directory: Path, name: str, workflow: str) -> Path:
    app = renamed_app(HELLO, name, directory)
    (app / "workflows" / "main.yaml").write_text(workflow)
    return app


# -- POST /v1/apps?dry_run=true --------------------------------------------------------


def test_dryRun_validApp_answersItsDescription_andDeploysNothing(
    cluster_config: ClusterConfig, alice: Tenant, bob: Tenant, tmp_path: Path
) -> None:
    """The deploy's validation answers at once and nothing is started, recorded or
    claimed: the app is not listed, not found, and its name is still free for another
    user's dry run."""
    name = f"dry-{alice.name}"
    app_dir = renamed_app(HELLO, name, tmp_path)
    before = _app_names(cluster_config, alice.token)
    admin_before = _app_names(cluster_config, admin_token(cluster_config))

    took = []
    for _ in range(3):
        started = time.monotonic()
        answer = _dry_run(cluster_config, alice.token, app_dir)
        took.append(time.monotonic() - started)
        assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "valid"
    assert body["app"]["name"] == name
    assert body["app"]["grains"] == ["normalize", "greet", "shout"]
    assert body["app"]["workflows"] == {"main": {"entry_grain": "normalize"}}
    assert "version" not in body["app"]  # nothing was deployed, so no version
    # the GUI calls it as the user types: how quick it is is printed, never asserted (a loaded
    # 2-core machine makes any bound flaky; speed lives in the benchmarks)
    print(f"dry run of a small app took {[round(t, 3) for t in took]} s")

    assert _app_names(cluster_config, alice.token) == before
    assert _app_names(cluster_config, admin_token(cluster_config)) == admin_before
    assert _call(cluster_config, "GET", f"/v1/apps/{name}", alice.token).status_code == 404
    # nothing claimed: another user's dry run of the same name is valid too
    assert _dry_run(cluster_config, bob.token, app_dir).status_code == 200


def test_dryRun_invalidWorkflow_isRefusedExactlyAsTheDeploy(
    cluster_config: ClusterConfig, alice: Tenant, tmp_path: Path
) -> None:
    """Problems name the file relative to the app, the place and the rule; the deploy of
    the same upload answers the very same refusal (one set of rules)."""
    name = f"broken-{alice.name}"
    app_dir = _broken_hello(
        tmp_path,
        name,
        "entry: normalize\ngrains:\n  normalize:\n    next: nope\n"
        "  greet: {next: shout}\n  shout: {}\n",
    )

    dry = _dry_run(cluster_config, alice.token, app_dir)
    deploy = _call(
        cluster_config,
        "POST",
        "/v1/apps?backend=process",
        alice.token,
        data=pack_app(app_dir),
        headers={"Content-Type": "application/x-tar"},
    )

    assert dry.status_code == 400, dry.text
    problems = dry.json()["problems"]
    assert "workflows/main.yaml: grains.normalize.next: 'nope' names no grain of 'grains'" in (
        problems
    )
    # the agent's private unpack directory never shows
    assert all(p.startswith("workflows/main.yaml: ") for p in problems), problems
    assert deploy.status_code == 400
    assert deploy.json() == dry.json()
    assert name not in _app_names(cluster_config, alice.token)


def test_dryRun_yamlSyntaxError_namesLineAndColumn(
    cluster_config: ClusterConfig, alice: Tenant, tmp_path: Path
) -> None:
    app_dir = _broken_hello(tmp_path, f"syntax-{alice.name}", "entry: [normalize\ngrains: {}\n")

    dry = _dry_run(cluster_config, alice.token, app_dir)

    assert dry.status_code == 400, dry.text
    (problem,) = dry.json()["problems"]
    assert problem.startswith("workflows/main.yaml:2:"), problem
    assert "malformed YAML" in problem


def test_dryRun_badParameters_andTakenName_areRefusedAsTheDeploy(
    cluster_config: ClusterConfig, bob: Tenant, alices_apps: dict[str, str], tmp_path: Path
) -> None:
    """A name another user holds is refused as a deploy would (409); so are a bad
    dry_run value, a bad backend and a remote grain the app lacks (400 naming it)."""
    taken = renamed_app(HELLO, alices_apps["native"], tmp_path)

    conflict = _dry_run(cluster_config, bob.token, taken)
    bad_flag = _call(cluster_config, "POST", "/v1/apps?dry_run=maybe", bob.token, data=b"x")
    bad_backend = _dry_run(cluster_config, bob.token, taken, "&backend=vm")
    not_an_archive = _call(cluster_config, "POST", "/v1/apps?dry_run=true", bob.token, data=b"x")
    mine = renamed_app(HELLO, f"remote-{bob.name}", tmp_path)
    bad_remote = _dry_run(cluster_config, bob.token, mine, "&remote_grains=greet,nope")

    assert conflict.status_code == 409, conflict.text
    assert "is taken" in conflict.json()["error"]
    assert bad_flag.status_code == 400
    assert bad_flag.json()["error"] == "dry_run must be true or false, got 'maybe'"
    assert bad_backend.status_code == 400
    assert "backend must be docker or process, got 'vm'" in bad_backend.json()["error"]
    assert not_an_archive.status_code == 400
    assert not_an_archive.json()["error"]
    assert bad_remote.status_code == 400
    assert bad_remote.json()["error"].startswith(
        f"remote_grains: 'nope' is not a grain of app 'remote-{bob.name}'"
    )


# -- GET /v1/apps/{app}/workflows/{workflow} -------------------------------------------


def test_workflowDefinition_nativeAndAsl_parsedAndAsWritten(
    cluster_config: ClusterConfig, alice: Tenant, alices_apps: dict[str, str]
) -> None:
    native = _call(
        cluster_config, "GET", f"/v1/apps/{alices_apps['native']}/workflows/main", alice.token
    )
    asl = _call(cluster_config, "GET", f"/v1/apps/{alices_apps['asl']}/workflows/main", alice.token)

    assert native.status_code == 200, native.text
    doc = native.json()
    assert (doc["app"], doc["workflow"], doc["kind"]) == (alices_apps["native"], "main", "native")
    assert doc["definition"]["entry"] == "normalize"
    assert doc["definition"]["grains"]["normalize"] == {"next": "greet"}
    assert doc["source"] == (HELLO / "workflows" / "main.yaml").read_text()
    assert asl.status_code == 200, asl.text
    doc = asl.json()
    assert doc["kind"] == "asl"
    written = (ASL / "workflows" / "main.json").read_text()
    assert doc["source"] == written
    assert doc["definition"] == json.loads(written)


def test_workflowDefinition_unknownWorkflowOrOthersApp_is404(
    cluster_config: ClusterConfig, alice: Tenant, bob: Tenant, alices_apps: dict[str, str]
) -> None:
    """Another user's app answers as a missing one, so its name does not leak."""
    app = alices_apps["native"]
    unknown = _call(cluster_config, "GET", f"/v1/apps/{app}/workflows/nope", alice.token)
    others = _call(cluster_config, "GET", f"/v1/apps/{app}/workflows/main", bob.token)
    missing = _call(cluster_config, "GET", "/v1/apps/no-such-app-x/workflows/main", bob.token)
    post = _call(cluster_config, "POST", f"/v1/apps/{app}/workflows/main", alice.token)

    assert unknown.status_code == 404
    assert unknown.json()["error"] == f"application '{app}' has no workflow 'nope'"
    assert others.status_code == 404
    assert others.json()["error"] == f"no application '{app}' is deployed"
    assert missing.json()["error"] == "no application 'no-such-app-x' is deployed"
    assert post.status_code == 405


# -- GET /v1/cluster -------------------------------------------------------------------


def _cluster(config: ClusterConfig, token: str) -> dict[str, Any]:
    answer = _call(config, "GET", "/v1/cluster", token)
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def test_cluster_userSeesOwnSandboxes_adminSeesAll(
    cluster_config: ClusterConfig, alice: Tenant, bob: Tenant, alices_apps: dict[str, str]
) -> None:
    mine = _cluster(cluster_config, alice.token)
    others = _cluster(cluster_config, bob.token)
    everything = _cluster(cluster_config, admin_token(cluster_config))

    (host,) = mine["hosts"]
    assert (host["host_id"], host["healthy"], host["error"]) == ("host-1", True, None)
    sandboxes = {s["app"]: s for s in host["sandboxes"]}
    assert set(sandboxes) == set(alices_apps.values())
    hello = sandboxes[alices_apps["native"]]
    assert hello["backend"] == "process"
    assert hello["state"].startswith("running")
    assert hello["owner"] == alice.name
    assert [w["grain"] for w in hello["workers"]] == ["normalize", "greet", "shout"]
    assert all(
        w["healthy"] and isinstance(w["pid"], int) and w["pid"] > 0 for w in hello["workers"]
    )

    (bobs_host,) = others["hosts"]
    assert bobs_host["healthy"] is True
    assert bobs_host["sandboxes"] == []
    admins = {s["app"] for s in everything["hosts"][0]["sandboxes"]}
    assert set(alices_apps.values()) <= admins


def test_cluster_needsAToken(cluster_config: ClusterConfig, cluster: Supervisor) -> None:
    assert _call(cluster_config, "GET", "/v1/cluster", None).status_code == 401
    assert (
        _call(cluster_config, "POST", "/v1/cluster", admin_token(cluster_config)).status_code == 405
    )


# -- the GUI's files -------------------------------------------------------------------


def test_root_redirectsToTheGui_throughNginx(
    cluster_config: ClusterConfig, cluster: Supervisor
) -> None:
    answer = _call(cluster_config, "GET", "/", None)

    assert answer.status_code == 302
    assert answer.headers["Location"] == "/ui/"


def test_gui_throughNginx_servesTheCheckoutsBuild_orSaysHowToBuildIt(
    cluster_config: ClusterConfig, cluster: Supervisor
) -> None:
    """The suite's frontends serve frontend.ui_dir's default, the checkout's own build."""
    answer = _call(cluster_config, "GET", "/ui/apps", None)

    if (cluster_config.ui_dir / "index.html").is_file():
        assert answer.status_code == 200
        assert answer.headers["Content-Type"].startswith("text/html")
        assert answer.text == (cluster_config.ui_dir / "index.html").read_text()
    else:
        assert answer.status_code == 503
        assert answer.json() == {"error": "the GUI is not built: run make setup"}


@dataclass(frozen=True)
class GuiFrontend:
    """An extra frontend process of the suite's cluster, serving ``dist``."""

    url: str
    port: int
    dist: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def gui_frontend(
    cluster: Supervisor, cluster_config: ClusterConfig, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GuiFrontend]:
    """The cluster's own frontend jar, with the cluster's own config but for its port and
    ``frontend.ui_dir`` (a directory that is not built yet)."""
    root = tmp_path_factory.mktemp("gui")
    dist = root / "dist"
    port = _free_port()
    document = json.loads((cluster_config.conf_dir / "cluster.json").read_text())
    document["frontend"]["ports"] = [port]
    document["frontend"]["ui_dir"] = str(dist)
    config_file = root / "cluster.json"
    config_file.write_text(json.dumps(document))
    jar = cluster_config.home / "frontend" / "target" / "frontend.jar"
    log = (root / "frontend.log").open("w")
    process = subprocess.Popen(
        [
            "java",
            "-Xmx128m",
            "-XX:+UseSerialGC",
            "-jar",
            str(jar),
            "--config",
            str(config_file),
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(url + "/health", timeout=5).status_code == 200:
                    break
            except requests.RequestException:
                pass  # not listening yet, or still starting
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    "the extra frontend did not start: " + (root / "frontend.log").read_text()
                )
            time.sleep(0.3)
        yield GuiFrontend(url, port, dist)
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def _build(dist: Path) -> None:
    (dist / "assets").mkdir(parents=True, exist_ok=True)
    (dist / "assets" / "index-5ac0de.js").write_text("console.log('sand')\n")
    (dist / "index.html").write_text(INDEX)


def _raw(port: int, target: str, token: str | None = None) -> str:
    """The answer to ``GET target`` sent byte for byte (no client normalizes the path)."""
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n".encode())
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def test_gui_notBuilt_answers503_thenServesTheBuild_withoutToken(gui_frontend: GuiFrontend) -> None:
    """Before the build: 503 saying how to build it. Once built (no restart): index.html
    with a strict CSP and no-cache, hashed assets cached for a year, index.html for the
    app's own routes, a missing asset 404; no token needed for any of it."""
    shutil.rmtree(gui_frontend.dist, ignore_errors=True)
    missing = requests.get(gui_frontend.url + "/ui/", timeout=30)
    assert missing.status_code == 503
    assert missing.json() == {"error": "the GUI is not built: run make setup"}

    _build(gui_frontend.dist)
    index = requests.get(gui_frontend.url + "/ui/", timeout=30)
    route = requests.get(gui_frontend.url + "/ui/executions/abc", timeout=30)
    asset = requests.get(gui_frontend.url + "/ui/assets/index-5ac0de.js", timeout=30)
    gone = requests.get(gui_frontend.url + "/ui/assets/index-000000.js", timeout=30)
    head = requests.head(gui_frontend.url + "/ui/", timeout=30)
    post = requests.post(gui_frontend.url + "/ui/", timeout=30)

    assert index.status_code == 200
    assert index.text == INDEX
    assert index.headers["Content-Type"].startswith("text/html")
    assert index.headers["Cache-Control"] == "no-cache"
    assert index.headers["X-Content-Type-Options"] == "nosniff"
    assert index.headers["Content-Security-Policy"].startswith(
        "default-src 'self'; style-src 'self' 'unsafe-inline';"
    )
    assert route.status_code == 200 and route.text == INDEX
    assert asset.status_code == 200
    assert "javascript" in asset.headers["Content-Type"]
    assert asset.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert gone.status_code == 404
    assert head.status_code == 200 and head.text == ""
    assert post.status_code == 405
    assert post.headers["Allow"] == "GET, HEAD"


def test_gui_traversal_neverLeavesTheBuild(
    gui_frontend: GuiFrontend, cluster_config: ClusterConfig
) -> None:
    """No spelling of ``..`` reaches the cluster's config (which holds the agents' secret
    and the Redis password) or anything else outside the build, with or without a token."""
    _build(gui_frontend.dist)
    conf = cluster_config.conf_dir / "cluster.json"
    secret = json.loads(conf.read_text())["host_agent"]["secret"]
    assert secret
    # a file beside the build, and a link inside the build leading to the config
    (gui_frontend.dist.parent / "beside.txt").write_text(secret)
    link = gui_frontend.dist / "leak.json"
    link.unlink(missing_ok=True)
    link.symlink_to(conf)
    relative_conf = "/".join([".."] * 12) + str(conf)
    targets = [
        "/ui/../beside.txt",
        "/ui/../../conf/cluster.json",
        "/ui/%2e%2e/beside.txt",
        "/ui/%2E%2E/%2E%2E/conf/cluster.json",
        "/ui/..%2fbeside.txt",
        "/ui/assets/..%2F..%2Fbeside.txt",
        "/ui/%2e%2e%2fbeside.txt",
        "/ui/..%5cbeside.txt",
        "/ui/%252e%252e/beside.txt",
        "/ui/leak.json",
        f"/ui/{relative_conf}",
        "/ui/" + "%2e%2e/" * 12 + str(conf).lstrip("/"),
    ]
    for token in (None, admin_token(cluster_config)):
        for target in targets:
            answer = _raw(gui_frontend.port, target, token)
            assert secret not in answer, target
            status = answer.split(" ", 2)[1]
            assert status in ("400", "401", "404", "200"), (target, answer[:200])
            if status == "200":
                assert answer.endswith(INDEX), (target, answer[:300])
            # and through nginx, which passes the path on as it came
            answer = _raw(cluster_config.ports.nginx, target, token)
            assert secret not in answer, target
            assert answer.split(" ", 2)[1] in ("400", "401", "404", "200", "503"), (
                target,
                answer[:200],
            )
