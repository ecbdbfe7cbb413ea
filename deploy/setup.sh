#!/usr/bin/env bash
# One idempotent set-up for a fresh Debian 12 machine of this kind: installs
# everything the stack needs from the package registries. Each step checks
# whether its result is already there and up to date, so a second run does
# nothing and finishes in seconds.
#
#   bash deploy/setup.sh          # everything
#   SAND_SETUP_SKIP=rootfs ...    # skip steps by name (comma separated: rootfs, helm)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
lib=$root/deploy/lib
venv=$root/.venv
skip=",${SAND_SETUP_SKIP:-},"

step() { printf '\033[1m%-10s\033[0m %s\n' "$1" "$2"; }
skipped() { [[ $skip == *",$1,"* ]]; }
# newer_than TARGET PATHS...: true if TARGET is missing or any file under PATHS is newer.
newer_than() {
  local target=$1; shift
  [[ ! -e $target ]] && return 0
  [[ -n $(find "$@" -newer "$target" -type f -print -quit 2>/dev/null) ]]
}

# --- Debian packages ---------------------------------------------------------
debs=(redis-server nginx docker.io containerd runc thrift-compiler librdkafka-dev
      debootstrap openjdk-17-jdk-headless maven python3-venv curl ca-certificates
      chromium fonts-liberation)   # the browser tests (tests/integration/test_gui*.py) drive Debian's Chromium
missing=()
for pkg in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  step debian "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d keeps the packages' own system services from starting: our
  # services run on their own ports under `sand up`, not as system daemons.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  step debian "ok"
fi

# --- Kafka and Cassandra from Maven Central ----------------------------------
for svc in kafka cassandra; do
  if newer_than "$lib/$svc/.complete" deploy/services/pom.xml; then
    step "$svc" "fetching from Maven Central"
    rm -rf "$lib/$svc"
    mvn -q -B -f deploy/services/pom.xml -P "$svc" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$lib/$svc"
    touch "$lib/$svc/.complete"
  else
    step "$svc" "ok"
  fi
done

# --- Python virtual environment ----------------------------------------------
stamp=$venv/.sand-installed
if [[ ! -x $venv/bin/python ]] || newer_than "$stamp" deploy/requirements.txt \
     sdk-python/pyproject.toml grain-worker/pyproject.toml; then
  step python "installing pinned packages into .venv"
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r deploy/requirements.txt
  # sand-sdk ships sand_workflows too (decision 0036): a venv set up before that has the
  # separate sand-workflows distribution, which would own the same package
  if "$venv/bin/pip" show -q sand-workflows 2>/dev/null; then
    "$venv/bin/pip" uninstall -q -y sand-workflows
  fi
  "$venv/bin/pip" install -q --no-deps -e sdk-python -e grain-worker
  touch "$stamp"
else
  step python "ok"
fi

# --- Thrift code for Python ----------------------------------------------------
# The generated packages (sand_bus, sand_contracts) are committed in sdk-python/src and
# shipped by the sand-sdk distribution, so the venv has them through its install of
# sdk-python like any other module (decision 0036). An IDL edited since they were generated
# regenerates them here; commit the result (tests/unit/sdk/test_generated_contracts.py
# fails until the two agree).
if newer_than sdk-python/src/sand_contracts/ttypes.py local-bus/src/main/thrift; then
  step thrift "generating sdk-python/src/sand_{bus,contracts} from local-bus/src/main/thrift"
  bash local-bus/gen-python.sh
else
  step thrift "ok"
fi
# Checkouts set up before decision 0036 generated into local-bus/gen-py and put it on the
# venv's path with a .pth file: remove both, or the venv would import the stale copy.
stale_pth=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/sand-gen-py.pth
if [[ -e $stale_pth || -e local-bus/gen-py ]]; then
  step thrift "removing the old local-bus/gen-py and $stale_pth"
  rm -rf "$stale_pth" local-bus/gen-py
fi

# --- The web GUI (frontend/ui): npm packages and the built SPA ------------------
# The frontends serve frontend/ui/dist at /ui/. `npm ci` installs exactly what
# package-lock.json records; the build runs again when a source or setting changed.
ui_step() {
  ui=frontend/ui
  if [[ ! -f $ui/package.json ]]; then
    step ui "skipped: $ui/package.json is missing (no GUI sources in this checkout)"
  else
    if newer_than "$ui/node_modules/.sand-installed" "$ui/package.json" "$ui/package-lock.json"; then
      step ui "installing npm packages (npm ci)"
      # The registry this machine reaches serves no builds for other platforms, so the lock
      # file lacks optional packages such as @rollup/rollup-darwin-arm64 and `npm ci` refuses
      # it as out of step; then `npm install --no-save` installs the same locked versions.
      if ! (cd "$ui" && npm ci --no-audit --no-fund --loglevel=silent); then
        step ui "npm ci refused the lock file; installing its versions with npm install --no-save"
        (cd "$ui" && npm install --no-save --no-audit --no-fund --loglevel=error)
      fi
      touch "$ui/node_modules/.sand-installed"
    fi
    ui_inputs=()
    for input in src public index.html package-lock.json vite.config.ts tsconfig.json; do
      [[ -e $ui/$input ]] && ui_inputs+=("$ui/$input")
    done
    if newer_than "$ui/dist/index.html" "${ui_inputs[@]}" "$ui/node_modules/.sand-installed"; then
      step ui "building the GUI (npm run build into $ui/dist)"
      (cd "$ui" && npm run --silent build)
    else
      step ui "ok"
    fi
  fi
}

# --- Packages mounted into application sandboxes ------------------------------
sandbox_step() {
  site=$root/build/sandbox-site
  if newer_than "$site/.complete" deploy/sandbox-requirements.txt; then
    step sandbox "installing the grain worker's packages into build/sandbox-site"
    rm -rf "$site"
    "$venv/bin/pip" install -q --target "$site" -r deploy/sandbox-requirements.txt
    touch "$site/.complete"
  else
    step sandbox "ok"
  fi
}

# --- Java build ----------------------------------------------------------------
# Every module the root pom.xml lists is an input (config/ and local-bus/contracts/ too: a
# change to Keys.java must not leave stale jars for the integration tests to run against).
java_step() {
  jars=(host-agent/target/host-agent.jar frontend/target/frontend.jar)
  java_inputs=(pom.xml)
  while read -r module; do
    java_inputs+=("$module/pom.xml" "$module/src")
  done < <(sed -n 's:.*<module>\(.*\)</module>.*:\1:p' pom.xml)
  build=0
  for jar in "${jars[@]}"; do
    if newer_than "$jar" "${java_inputs[@]}"; then build=1; fi
  done
  if ((build)); then
    step java "building (mvn package)"
    mvn -q -B -DskipTests package
  else
    step java "ok"
  fi
}

# --- Sandbox base image root file system -----------------------------------------
rootfs_step() {
  if skipped rootfs; then
    step rootfs "skipped"
  elif [[ ! -s $lib/sandbox/rootfs.tar ]] || newer_than "$lib/sandbox/rootfs.tar" deploy/build-rootfs.sh; then
    step rootfs "building the sandbox root file system (debootstrap, about a minute)"
    bash deploy/build-rootfs.sh "$lib/sandbox/rootfs.tar"
  else
    step rootfs "ok"
  fi
}

# --- helm, for the chart check (tests/unit/deploy/test_chart.py) ------------------
helm_step() {
  if skipped helm; then
    step helm "skipped"
  else
    local helm
    helm=$(bash deploy/helm/helm-path.sh)
    step helm "$helm"
  fi
}

# --- The steps above need nothing of each other: they run at once -------------------
# On a fresh clone each one waits on the network or a single process much of its time; one
# after another they left a third of the two cores idle for two minutes. Each step's output
# is kept in build/setup/<step>.log and printed once it is done; the first to fail fails set-up.
logs=$root/build/setup
mkdir -p "$logs"
declare -A running=()
for name in ui sandbox java rootfs helm; do
  "${name}_step" >"$logs/$name.log" 2>&1 &
  running[$name]=$!
done
failed=()
for name in ui sandbox java rootfs helm; do
  status=0
  wait "${running[$name]}" || status=$?
  cat "$logs/$name.log"
  ((status == 0)) || failed+=("$name")
done
if ((${#failed[@]})); then
  echo "set-up failed in: ${failed[*]} (their logs: build/setup/)" >&2
  exit 1
fi
step done "set-up complete"
