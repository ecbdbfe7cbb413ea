#!/usr/bin/env bash
# `make run`: start the stack, deploy the bundled example, invoke it, print its result.
set -euo pipefail
cd "$(dirname "$0")/.."
sand=.venv/bin/sand
example=examples/hello
"$sand" up   # also makes the admin token, STATE/conf/admin.token
token_file=$(.venv/bin/python -c 'from sand.cluster.config import load_config; print(load_config().admin_token_file)')
# This machine's `sand` calls its own cluster with that token unless told otherwise; a token
# saved by an earlier `sand login` to this URL wins, so if it is refused (the state dir was
# wiped since, say), sign in as this cluster's admin instead.
if ! "$sand" whoami >/dev/null 2>&1; then
  "$sand" login < "$token_file"
fi
"$sand" whoami
if "$sand" --help | grep -q " deploy "; then
  "$sand" deploy "$example"
  input=$(.venv/bin/python -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["main"]["input"]))' "$example/expected.json")
  echo "invoking hello with $input" >&2
  "$sand" invoke hello --input "$input"
else
  # The invocation path (deploy/invoke) has not landed yet: show the cluster instead.
  echo "deploy/invoke are not implemented yet (see README, 'Status'); the cluster is up:" >&2
  "$sand" status
fi
gui=$(.venv/bin/python -c 'from sand.cluster.config import load_config; print(load_config().gateway_url + "/ui/")')
echo "the stack keeps running; stop it with: make stop" >&2
echo "the admin token is in $token_file; elsewhere, sign in with: sand login < $token_file" >&2
echo "the web GUI: $gui (sign in by pasting the token in $token_file)" >&2
