"""Checks the manifests `helm template` rendered for each variant (called by check.sh).

    python deploy/helm/verify_rendered.py build/chart

Every document must parse, be a named object of an expected kind, and the parts SAND relies on
must be there: the agent's DaemonSet with its Redis sidecar and the node's name as host id, the
frontends with health probes, a cluster.json that has every key the Java services require.
Exits 1 naming each problem.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

# kinds each variant must render (and nothing else)
EXPECTED: dict[str, Counter[str]] = {
    "default": Counter(
        ConfigMap=1, Secret=1, DaemonSet=1, Deployment=1, Service=1, PodDisruptionBudget=1
    ),
    "operators": Counter(
        ConfigMap=1,
        Secret=1,
        DaemonSet=1,
        Deployment=1,
        Service=1,
        PodDisruptionBudget=1,
        Ingress=1,
        Kafka=1,
        KafkaNodePool=1,
        K8ssandraCluster=1,
    ),
    "dind": Counter(
        ConfigMap=1, Secret=1, DaemonSet=1, Deployment=1, Service=1, PodDisruptionBudget=1
    ),
    "process": Counter(ConfigMap=1, DaemonSet=1, Deployment=1, Service=1, PodDisruptionBudget=1),
}
# the sections ClusterConfig.parse requires (config/src/main/java/dev/sand/config/)
CLUSTER_KEYS = {"state_dir", "host_id", "redis", "kafka", "cassandra", "docker", "frontend"}
CLUSTER_KEYS |= {"host_agent", "nginx", "sandbox"}


class Problems(list[str]):
    def check(self, ok: bool, message: str) -> None:
        if not ok:
            self.append(message)


def load(path: Path) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    for doc in docs:
        if not isinstance(doc, dict):
            raise ValueError(f"{path}: a document is not a mapping: {doc!r:.80}")
    return docs


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == kind)


def containers(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in pod.get("containers", []) + pod.get("initContainers", [])}


def verify(variant: str, docs: list[dict[str, Any]], problems: Problems) -> None:
    where = f"{variant}:"
    for doc in docs:
        problems.check(
            bool(doc.get("apiVersion")) and bool(doc.get("metadata", {}).get("name")),
            f"{where} {doc.get('kind')} without apiVersion or metadata.name",
        )
    kinds = Counter(d.get("kind", "?") for d in docs)
    problems.check(kinds == EXPECTED[variant], f"{where} kinds {dict(kinds)}")
    names = Counter((d["kind"], d["metadata"]["name"]) for d in docs)
    problems.check(max(names.values()) == 1, f"{where} duplicate objects {names}")

    config = json.loads(one(docs, "ConfigMap")["data"]["cluster.json"])
    problems.check(config.keys() >= CLUSTER_KEYS, f"{where} cluster.json lacks {CLUSTER_KEYS}")
    problems.check(
        config["redis"]["socket"].startswith(config["state_dir"] + "/"),
        f"{where} Redis socket outside the state dir",
    )

    agent = one(docs, "DaemonSet")["spec"]["template"]["spec"]
    parts = containers(agent)
    problems.check({"host-agent", "redis"} <= parts.keys(), f"{where} agent pod has {parts}")
    env = {e["name"]: e for e in parts["render-config"]["env"]}
    problems.check(
        env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName",
        f"{where} host id not from spec.nodeName",
    )
    privileged = sorted(
        name for name, c in parts.items() if c.get("securityContext", {}).get("privileged") is True
    )
    expect_privileged = ["dind"] if variant == "dind" else []
    problems.check(privileged == expect_privileged, f"{where} privileged containers {privileged}")
    volumes = {v["name"]: v for v in agent["volumes"]}
    problems.check("hostPath" in volumes["redis-socket"], f"{where} Redis socket not a hostPath")
    docker = config["docker"]
    if variant == "process":
        problems.check(not docker["enabled"], f"{where} docker enabled for the process backend")
        problems.check("docker-socket" not in volumes, f"{where} Docker socket mounted")
    elif variant == "dind":
        problems.check("docker-socket" not in volumes, f"{where} node Docker socket mounted")
    else:
        problems.check(
            volumes["docker-socket"]["hostPath"]["path"] == docker["host"].removeprefix("unix://"),
            f"{where} the Docker socket mounted is not the one in cluster.json",
        )

    frontend = one(docs, "Deployment")
    problems.check(frontend["spec"]["replicas"] == 2, f"{where} frontend replicas")
    fparts = containers(frontend["spec"]["template"]["spec"])
    for probe in ("readinessProbe", "livenessProbe"):
        path = fparts["nginx"].get(probe, {}).get("httpGet", {}).get("path")
        problems.check(path == "/health", f"{where} frontend {probe} is not on /health")

    if variant == "operators":
        problems.check(
            config["kafka"]["bootstrap"].startswith("sand-kafka-kafka-bootstrap."),
            f"{where} Kafka bootstrap {config['kafka']['bootstrap']}",
        )
        kafka = one(docs, "Kafka")["spec"]["kafka"]["config"]
        problems.check(
            kafka["default.replication.factor"] == 3 and kafka["min.insync.replicas"] == 2,
            f"{where} Kafka replication {kafka}",
        )
        pool = one(docs, "KafkaNodePool")["spec"]
        problems.check(sorted(pool["roles"]) == ["broker", "controller"], f"{where} KRaft roles")
        dcs = one(docs, "K8ssandraCluster")["spec"]["cassandra"]["datacenters"]
        problems.check(dcs[0]["size"] == 3, f"{where} Cassandra size")
        # the agents read and write at LOCAL_QUORUM only when told the keyspace's replicas
        problems.check(
            config["cassandra"].get("replication_factor") == 3,
            f"{where} cluster.json cassandra.replication_factor "
            f"{config['cassandra'].get('replication_factor')}",
        )
        problems.check(
            config["cassandra"]["contact_point"].startswith("sand-cassandra-dc1-service."),
            f"{where} Cassandra contact point {config['cassandra']['contact_point']}",
        )


def main(out: Path) -> int:
    problems = Problems()
    for variant in EXPECTED:
        verify(variant, load(out / f"{variant}.yaml"), problems)
    for problem in problems:
        print(f"verify_rendered: {problem}", file=sys.stderr)
    if not problems:
        print(f"verify_rendered: {len(EXPECTED)} variants as expected")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
