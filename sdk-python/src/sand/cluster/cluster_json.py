"""``cluster.json``: what ``sand up`` hands the Java services (frontends, host agents).

Its shape is declared once, in the JSON Schema ``CLUSTER_SCHEMA`` (decision 0038); the Python
tests check what ``cluster_document`` builds against it, the Java tests check that
``ClusterConfig`` reads exactly its keys.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sand.cluster.config import ClusterConfig
from sand.cluster.topology import HostPlan

# SAND's own Python packages, relative to the checkout, that grain workers import
# (sdk-python/src holds the generated sand_bus and sand_contracts too: decision 0036).
SANDBOX_SOURCE_DIRS = ("sdk-python/src", "workflows/src", "grain-worker/src")
# The one declaration of cluster.json's keys and types, relative to the checkout (decision
# 0038): in the Java config module's resources, so the parser's tests read it from their
# classpath; the Python tests check cluster_document against it.
CLUSTER_SCHEMA = "config/src/main/resources/dev/sand/config/cluster.schema.json"


def write_cluster_json(config: ClusterConfig) -> Path:
    """Write the resolved config the Java services read; returns the shared file's path.

    ``STATE/conf/cluster.json`` (frontends, `sand`) describes host-1 in its per-host
    fields and lists every host under ``hosts``; with several hosts each agent gets
    ``STATE/hosts/<id>/conf/cluster.json`` describing itself."""
    plans = config.host_plans
    shared = config.conf_dir / "cluster.json"
    _write_json(shared, cluster_document(config, plans[0], config.state_dir))
    if len(plans) > 1:
        for plan in plans:
            document = cluster_document(config, plan, plan.state_dir)
            _write_json(plan.conf_dir / "cluster.json", document)
    return shared


def _write_json(path: Path, document: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(document, indent=2) + "\n")
    partial.replace(path)  # a service starting now never reads half a file


def cluster_document(config: ClusterConfig, plan: HostPlan, state_dir: Path) -> dict[str, object]:
    """The content of one cluster.json: the shared services, ``plan``'s own fields, the
    list of every host. Its shape is declared once, in the JSON Schema ``CLUSTER_SCHEMA``
    (decision 0038): a key added here goes there too, and Java's ``ClusterConfig`` reads it."""
    return {
        "state_dir": str(state_dir),
        "host_id": plan.id,
        "redis": {"socket": str(plan.redis_socket), "password": config.redis_password},
        "kafka": {"bootstrap": config.kafka_bootstrap},
        "cassandra": {
            "contact_point": config.contact_point_of(plan),
            "datacenter": "datacenter1",
            "keyspace": "sand",
            "execution_retention_days": config.execution_retention_days,
            "replication_factor": config.replication_factor,
        },
        "docker": {"host": config.docker_url, "enabled": config.docker_mode != "off"},
        "frontend": {
            "ports": list(config.ports.frontends),
            "max_payload_kb": config.max_payload_kb,
            "ui_dir": str(config.ui_dir),
        },
        # the agents ask for the secret on every request but /health; the frontends send it
        "host_agent": {
            "port": config.ports.host_agent,
            "bind": plan.ip,
            "secret": config.internal_secret,
        },
        "nginx": {"port": config.ports.nginx},
        "tracing": {"otlp_endpoint": config.otlp_endpoint},
        "admission": {
            "max_queued_per_app": config.admission.max_queued_per_app,
            "max_queued_per_host": config.admission.max_queued_per_host,
            "retry_after_s": config.admission.retry_after_s,
            "adaptive": config.admission.adaptive,
        },
        "home": str(config.home),
        "sandbox": {
            "backend": config.sandbox_backend,
            "base_image": config.base_image,
            "python": sys.executable,
            "source_dirs": [str(config.home / part) for part in SANDBOX_SOURCE_DIRS],
            "site_dir": str(config.home / "build" / "sandbox-site"),
            "cpus": config.sandbox_cpus,
            "pids_limit": config.sandbox_pids_limit,
            "tmp_size_mb": config.sandbox_tmp_size_mb,
            **config.sandbox_limits.to_json(),
        },
        "hosts": [
            {
                "id": host.id,
                "redis_socket": str(host.redis_socket),
                "agent_url": host.agent_url(config.ports.host_agent),
            }
            for host in config.host_plans
        ],
    }
