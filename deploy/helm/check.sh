#!/usr/bin/env bash
# Lints and renders the SAND Helm chart, then checks what it renders.
#
#   bash deploy/helm/check.sh        (or: make chart-check)
#
# helm: the one deploy/helm/helm-path.sh gives (on PATH, else built once per machine into the
# user's cache). Rendered manifests go to build/chart/<variant>.yaml. No cluster is needed and
# none is contacted.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
chart=deploy/helm/sand
out=$root/build/chart
py=$root/.venv/bin/python
[[ -x $py ]] || py=python3

step() { printf '\033[1m%-9s\033[0m %s\n' "$1" "$2"; }

helm=$(bash deploy/helm/helm-path.sh)
step helm "$("$helm" version --template '{{.Version}}') ($helm)"

# helm keeps a cache and a repository list in $HOME otherwise; this check needs neither
export HELM_CACHE_HOME=$root/build/helm/cache HELM_CONFIG_HOME=$root/build/helm/config \
  HELM_DATA_HOME=$root/build/helm/data

# variant name -> --set flags
declare -A variants=(
  [default]=""
  [operators]="kafka.strimzi.enabled=true,cassandra.k8ssandra.enabled=true,ingress.enabled=true"
  [dind]="docker.mode=dind,cassandra.createKeyspace=false"
  [process]="sandbox.backend=process,hostNetwork=false,redis.existingSecret=my-redis"
)
mkdir -p "$out"
for name in default operators dind process; do
  set_flags=()
  [[ -n ${variants[$name]} ]] && set_flags=(--set "${variants[$name]}")
  step lint "$name"
  "$helm" lint "$chart" --strict "${set_flags[@]}" --quiet
  step render "$name -> build/chart/$name.yaml"
  "$helm" template sand "$chart" --namespace sand "${set_flags[@]}" >"$out/$name.yaml"
done

# values.schema.json must refuse what the services would refuse at start-up
step schema "values.schema.json refuses bad values"
for bad in cassandra.keyspace=Bad-Name frontend.maxPayloadKb=0 sandbox.backend=vm \
           kafka.bootstrap=no-port hostAgent.port=80; do
  if "$helm" template sand "$chart" --set "$bad" >/dev/null 2>&1; then
    echo "check.sh: the chart accepted --set $bad" >&2
    exit 1
  fi
done

step verify "rendered manifests"
"$py" deploy/helm/verify_rendered.py "$out"
step ok "chart checked"
