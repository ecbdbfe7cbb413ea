"""Layered cluster configuration: defaults, file, environment, overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
from sand.cluster.cluster_json import cluster_document
from sand.cluster.config import ConfigError, load_config


def test_defaults_avoidStandardPorts() -> None:
    """No default port is the standard port of Redis, Kafka, Cassandra, nginx, HTTP or Docker."""
    config = load_config(env={})
    standard = {6379, 9092, 9093, 9042, 7000, 7199, 80, 443, 8080, 2375, 2376}
    assert not standard & set(config.ports.named().values())


def test_environment_overridesFileOverridesDefaults(tmp_path: Path) -> None:
    """Later layers win: env beats file beats defaults."""
    file = tmp_path / "sand.toml"
    file.write_text("[kafka]\nport = 20000\nheap_mb = 300\n")
    config = load_config(file, env={"SAND_KAFKA_PORT": "21000", "SAND_STATE_DIR": str(tmp_path)})
    assert config.ports.kafka == 21000
    assert config.kafka_heap_mb == 300
    assert config.state_dir == tmp_path.resolve()


def test_environment_listOfPorts() -> None:
    """SAND_FRONTEND_PORTS takes a comma-separated list."""
    config = load_config(env={"SAND_FRONTEND_PORTS": "20001,20002,20003"})
    assert config.ports.frontends == (20001, 20002, 20003)


def test_unknownKeyInFile_namesFileAndKey(tmp_path: Path) -> None:
    """A typo in a config file is refused, naming the file and key."""
    file = tmp_path / "sand.toml"
    file.write_text("[kafka]\nprot = 1\n")
    with pytest.raises(ConfigError, match=r"sand.toml: unknown key kafka.prot"):
        load_config(file, env={})


def test_badPort_namesKeyAndValue() -> None:
    """A port outside 1024..65535 names the key and the value."""
    with pytest.raises(ConfigError, match=r"nginx.port must be a port number .* got 80"):
        load_config(env={}, overrides={"nginx": {"port": 80}})


def test_samePortTwice_namesBothOwners() -> None:
    """Two services on one port is refused, naming both."""
    with pytest.raises(ConfigError, match=r"port 18080 is given to both .*nginx"):
        load_config(env={}, overrides={"host_agent": {"port": 18080}})


def test_badEnvironmentNumber_namesVariable() -> None:
    """A non-number in a numeric variable names the variable."""
    with pytest.raises(ConfigError, match=r"SAND_KAFKA_PORT='x'"):
        load_config(env={"SAND_KAFKA_PORT": "x"})


def test_malformedToml_namesFile(tmp_path: Path) -> None:
    """A syntax error in the config file names the file."""
    file = tmp_path / "broken.toml"
    file.write_text("[kafka\n")
    with pytest.raises(ConfigError, match="broken.toml"):
        load_config(file, env={})


def test_dockerModeExternalWithoutHost_isRefused() -> None:
    """External Docker needs an address."""
    with pytest.raises(ConfigError, match=r"docker.host must be set"):
        load_config(env={}, overrides={"docker": {"mode": "external"}})


def test_tracing_offByDefault_endpointValidated() -> None:
    """Span export is off unless [tracing] otlp_endpoint names an http(s) URL; a bad one is
    refused naming the key and the value."""
    assert load_config(env={}).otlp_endpoint == ""
    url = "http://127.0.0.1:4318/v1/traces"
    assert load_config(env={"SAND_TRACING_OTLP_ENDPOINT": url}).otlp_endpoint == url
    with pytest.raises(ConfigError, match=r"tracing.otlp_endpoint .* got 'ftp://x'"):
        load_config(env={}, overrides={"tracing": {"otlp_endpoint": "ftp://x"}})


def test_executionRetention_defaultsTo30Days_andIsReadFromTheEnvironment() -> None:
    """[executions] retention_days is 30 unless a layer says otherwise."""
    assert load_config(env={}).execution_retention_days == 30
    config = load_config(env={"SAND_EXECUTIONS_RETENTION_DAYS": "7"})
    assert config.execution_retention_days == 7


def test_executionRetention_zero_namesKeyAndRule() -> None:
    """A retention of 0 days would drop every record at once: refused."""
    with pytest.raises(ConfigError, match=r"executions.retention_days .* from 1 to 3650, got 0"):
        load_config(env={}, overrides={"executions": {"retention_days": 0}})


def test_maxPayload_beyondWhatTheFrontendsTake_isRefusedHere() -> None:
    """The frontends refuse a cluster.json whose max_payload_kb is over their bound (one
    constant in contracts.thrift); `sand` refuses it first, naming the key, instead of
    starting frontends that exit."""
    assert load_config(env={}, overrides={"frontend": {"max_payload_kb": 10240}})
    with pytest.raises(ConfigError, match=r"frontend.max_payload_kb .* from 1 to 10240, got 10241"):
        load_config(env={}, overrides={"frontend": {"max_payload_kb": 10241}})


def test_sandboxLimits_defaultsEnvironmentAndClusterJson() -> None:
    """[sandbox] cpu_weight, memory_mb and their maxima (decision 0022): committed defaults,
    overridden by the environment, handed to the agents in cluster.json."""
    default = load_config(env={}).sandbox_limits
    assert (default.cpu_weight, default.max_cpu_weight) == (100, 100)
    assert (default.memory_mb, default.max_memory_mb, default.max_sandbox_memory_mb) == (
        512,
        4096,
        8192,
    )
    config = load_config(env={"SAND_SANDBOX_MAX_CPU_WEIGHT": "400"})
    assert config.sandbox_limits.max_cpu_weight == 400
    document = cluster_document(config, config.host_plans[0], config.state_dir)
    assert document["sandbox"]["max_cpu_weight"] == 400  # type: ignore[index]
    assert document["sandbox"]["memory_mb"] == 512  # type: ignore[index]


@pytest.mark.parametrize(
    ("sandbox", "said"),
    [
        ({"cpu_weight": 0}, r"sandbox.cpu_weight must be a whole number from 1 to 10000, got 0"),
        (
            {"cpu_weight": 200, "max_cpu_weight": 150},
            r"sandbox.max_cpu_weight must be a whole number from sandbox.cpu_weight \(200\) to "
            r"10000, got 150",
        ),
        (
            {"memory_mb": 1024, "max_memory_mb": 512},
            r"sandbox.max_memory_mb must be a whole number at least sandbox.memory_mb \(1024\), "
            r"got 512",
        ),
        (
            {"max_sandbox_memory_mb": 100},
            r"sandbox.max_sandbox_memory_mb must be a whole number at least sandbox.max_memory_mb",
        ),
    ],
)
def test_sandboxLimits_outOfBounds_nameKeyRuleAndValue(sandbox: dict[str, int], said: str) -> None:
    """A default above its maximum, or a bound out of range, is refused at start-up."""
    with pytest.raises(ConfigError, match=said):
        load_config(env={}, overrides={"sandbox": sandbox})


def test_uiDir_defaultsUnderHome_fileAndEnvironmentOverride(tmp_path: Path) -> None:
    """[frontend] ui_dir: the built GUI the frontends serve; "" = <home>/frontend/ui/dist.
    The frontends read it from cluster.json."""
    default = load_config(env={})
    assert default.ui_dir == default.home / "frontend" / "ui" / "dist"
    file = tmp_path / "sand.toml"
    file.write_text(f'[frontend]\nui_dir = "{tmp_path / "gui"}"\n')
    assert load_config(file, env={}).ui_dir == tmp_path / "gui"
    from_env = load_config(env={"SAND_FRONTEND_UI_DIR": str(tmp_path / "env-gui")})
    assert from_env.ui_dir == tmp_path / "env-gui"
    document = cluster_document(from_env, from_env.host_plans[0], from_env.state_dir)
    assert document["frontend"] == {
        "ports": list(from_env.ports.frontends),
        "max_payload_kb": from_env.max_payload_kb,
        "ui_dir": str(tmp_path / "env-gui"),
    }


def test_uiDir_notAString_isRefused() -> None:
    with pytest.raises(ConfigError, match=r"frontend.ui_dir must be a string, got 5"):
        load_config(env={}, overrides={"frontend": {"ui_dir": 5}})


def test_admission_defaultsFromTheFile_readByTheJavaServices() -> None:
    """[admission] has committed defaults; the environment overrides them; cluster.json
    carries them to the frontends (decision 0023)."""
    default = load_config(env={}).admission
    assert (
        default.max_queued_per_app,
        default.max_queued_per_host,
        default.retry_after_s,
        default.adaptive,
    ) == (32, 128, 1, False)
    config = load_config(
        env={"SAND_ADMISSION_MAX_QUEUED_PER_APP": "5", "SAND_ADMISSION_ADAPTIVE": "true"}
    )
    assert config.admission.max_queued_per_app == 5
    document = cluster_document(config, config.host_plans[0], config.state_dir)
    assert document["admission"] == {
        "max_queued_per_app": 5,
        "max_queued_per_host": 128,
        "retry_after_s": 1,
        "adaptive": True,
    }


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"max_queued_per_app": 0}, r"admission.max_queued_per_app .* from 1 to 1000000, got 0"),
        (
            {"max_queued_per_app": 10, "max_queued_per_host": 5},
            r"admission.max_queued_per_host .* from 10 to 1000000, got 5",
        ),
        ({"retry_after_s": 0}, r"admission.retry_after_s .* from 1 to 3600, got 0"),
        ({"retry_after_s": True}, r"admission.retry_after_s .* got True"),
        ({"adaptive": "yes"}, r"admission.adaptive must be true or false, got 'yes'"),
    ],
)
def test_admission_badBound_namesKeyAndRule(values: dict[str, object], message: str) -> None:
    """A bound out of range is refused at start-up, naming the key, the rule and the value."""
    with pytest.raises(ConfigError, match=message):
        load_config(env={}, overrides={"admission": values})


def test_javaServices_everyMemoryRegionHasACeiling() -> None:
    """The host agent and the frontends start with a ceiling on heap, direct buffers,
    metaspace and code cache, and glibc's arenas capped (decision 0023): their resident
    memory is bounded under any load."""
    from sand.cluster.services import build_services

    config = load_config(env={})
    java = [s for s in build_services(config) if "java" in s.argv]
    assert {s.name for s in java} >= {"host-agent", "frontend-1", "frontend-2"}
    for spec in (s for s in java if "-Dsand.service=" + s.name in s.argv):
        assert any(a.startswith("-Xmx") for a in spec.argv), spec.name
        for flag in ("MaxDirectMemorySize", "MaxMetaspaceSize", "ReservedCodeCacheSize"):
            assert any(a.startswith(f"-XX:{flag}=") for a in spec.argv), (spec.name, flag)
        assert ("MALLOC_ARENA_MAX", "2") in spec.env, spec.name


@pytest.mark.parametrize("quick", [False, True])
def test_quickJit_c1OnlyForTheAgentKafkaAndCassandra_frontendsAlways(quick: bool) -> None:
    """``cluster.quick_jit`` (short-lived clusters) stops the agent's, Kafka's and
    Cassandra's JIT at C1 and turns the bytecode verifier off in every JVM; the frontends
    run C1 only either way (decision 0030)."""
    from sand.cluster.services import build_services
    from sand.cluster.specs import QUICK_START

    config = load_config(env={}, overrides={"cluster": {"quick_jit": quick}})
    assert config.quick_jit is quick
    services = build_services(config)
    c1_only = {s.name for s in services if "-XX:TieredStopAtLevel=1" in s.argv}
    heavy = {"host-agent", "kafka", "cassandra"}
    assert c1_only == ({"frontend-1", "frontend-2"} | (heavy if quick else set()))
    # and a quick cluster's JVMs skip the bytecode verifier, every one; the others verify
    unverified = {s.name for s in services if QUICK_START[1] in s.argv}
    java = {s.name for s in services if s.argv[0] == "java"}
    assert java >= heavy | {"frontend-1", "frontend-2"}
    assert unverified == (java if quick else set())


def test_quickJit_notABoolean_namesKey() -> None:
    with pytest.raises(ConfigError, match=r"cluster.quick_jit must be true or false, got 'yes'"):
        load_config(env={}, overrides={"cluster": {"quick_jit": "yes"}})
