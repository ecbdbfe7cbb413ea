#!/usr/bin/env bash
# Prints the path of a helm to use: the one on PATH, else one built once from the Go module
# proxy (pinned below; about two minutes of both cores) into the user's cache,
# ${XDG_CACHE_HOME:-~/.cache}/sand/tools, as Maven's and Go's own caches are kept, so a fresh
# clone does not build it again. `deploy/setup.sh` calls it beside its other steps; a second
# caller meanwhile waits for the first one's build (a lock) instead of building it twice.
set -euo pipefail
HELM_VERSION=v3.21.4
tools=${XDG_CACHE_HOME:-$HOME/.cache}/sand/tools/helm-$HELM_VERSION

if helm=$(command -v helm); then
  echo "$helm"
  exit 0
fi
# one directory per version (`go install` does not stamp the patch release into the binary)
helm=$tools/helm
mkdir -p "$tools"
exec 9>"$tools/.lock"
flock 9
if [[ ! -x $helm ]]; then
  command -v go >/dev/null || { echo "helm-path.sh: neither helm nor go is installed" >&2; exit 1; }
  echo "building helm $HELM_VERSION into $tools (once per machine)" >&2
  start=$SECONDS
  # built beside, then moved: an interrupted build leaves no half-written helm to trust
  GOBIN=$tools/.partial GOFLAGS=-modcacherw go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
  mv "$tools/.partial/helm" "$helm"
  echo "built helm in $((SECONDS - start)) s" >&2
fi
echo "$helm"
