#!/usr/bin/env bash
# Lints and renders the SAND Helm chart, then checks what it renders.
#
#   bash deploy/helm/check.sh        (or: make chart-check)
#
# helm: the one on PATH, else one built once from the Go module proxy (pinned below; about
# two minutes of both cores) into the user's cache, ${XDG_CACHE_HOME:-~/.cache}/sand/tools, so
# that a fresh clone does not build it again (as Maven's and Go's own caches are kept). Rendered
# manifests go to build/chart/<variant>.yaml. No cluster is needed and none is contacted.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
HELM_VERSION=v3.21.4
chart=deploy/helm/sand
out=$root/build/chart
tools=${XDG_CACHE_HOME:-$HOME/.cache}/sand/tools/helm-$HELM_VERSION
py=$root/.venv/bin/python
[[ -x $py ]] || py=python3

step() { printf '\033[1m%-9s\033[0m %s\n' "$1" "$2"; }

helm=$(command -v helm || true)
if [[ -z $helm ]]; then
  helm=$tools/helm
  # one directory per version (`go install` does not stamp the patch release into the binary)
  if [[ ! -x $helm ]]; then
    command -v go >/dev/null || { echo "check.sh: neither helm nor go is installed" >&2; exit 1; }
    step helm "building $HELM_VERSION into $tools (once per machine)"
    start=$SECONDS
    mkdir -p "$tools"
    # built beside, then moved: an interrupted build leaves no half-written helm to trust
    GOBIN=$tools/.partial GOFLAGS=-modcacherw go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
    mv "$tools/.partial/helm" "$helm"
    step helm "built in $((SECONDS - start)) s"
  fi
fi
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
