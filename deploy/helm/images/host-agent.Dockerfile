# The host agent's image. Build from the repository root after `make setup` (jars built):
#   docker build -f deploy/helm/images/host-agent.Dockerfile -t REGISTRY/sand/host-agent:0.1.0 .
#
# Debian bookworm, not the Temurin image's Ubuntu: the agent's Python validates apps and pip-installs
# their requirements for the sandboxes, whose base image (sand-base:bookworm-2) runs bookworm's
# Python 3.11; packages with C extensions must be built for that same Python. The JRE is
# Temurin's, copied in.
FROM eclipse-temurin:17-jre AS jre

FROM debian:bookworm-slim
ENV JAVA_HOME=/opt/java/openjdk PATH=/opt/java/openjdk/bin:$PATH
COPY --from=jre /opt/java/openjdk /opt/java/openjdk
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*

# SAND's Python packages and the grain worker's dependencies. The init container of the
# DaemonSet copies /opt/sand/python and /opt/sand/site to the node (hostDir/lib), from where the
# node's Docker engine mounts them into sandboxes.
COPY deploy/sandbox-requirements.txt /opt/sand/sandbox-requirements.txt
RUN python3 -m venv /opt/sand/venv \
 && /opt/sand/venv/bin/pip install -q --no-cache-dir -r /opt/sand/sandbox-requirements.txt \
 && /opt/sand/venv/bin/pip install -q --no-cache-dir --target /opt/sand/site \
      -r /opt/sand/sandbox-requirements.txt
# /opt/sand/venv/bin/python3 is the interpreter the chart's cluster.json names (sandbox.python):
# the agent validates apps with it (`-m sand_worker.describe`) and pip-installs their requirements
COPY sdk-python/src /opt/sand/python/sdk-python/src
COPY workflows/src /opt/sand/python/workflows/src
COPY grain-worker/src /opt/sand/python/grain-worker/src
COPY deploy/helm/images/probe.py /opt/sand/probe.py
COPY host-agent/target/host-agent.jar /opt/sand/host-agent.jar

CMD ["java", "-XX:+UseSerialGC", "-jar", "/opt/sand/host-agent.jar", "--config", "/etc/sand/cluster.json"]
