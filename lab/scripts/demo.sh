#!/usr/bin/env bash
# make demo: the pipeline end to end on this machine, with duplicates and a crash.
#
# By default it deploys template.yaml into MiniStack (the same deploy as make e2e, built with
# crash points) and drives the deployed Lambdas through the HTTP API: the API Gateway route,
# the receiver, SQS and its event source, the processor, and the scheduled reclaimer.
# `make demo ARGS="--target dev"` runs the same handlers in `hooklab dev` processes instead
# (seconds instead of minutes; handy when debugging). Other ARGS go to `hooklab demo`
# (try ARGS=--help).
#
# The stack target deploys through lab/scripts/e2e.sh, so it runs under enforced IAM (MiniStack with
# AUTH=true; the functions use their roles' credentials).
#
# The demo builds from a snapshot of the working tree taken when it starts (.demo/src), so you
# can keep editing while it runs.
#
# Environment: HOOKLEDGER_E2E_PORT (4577): the stack target's emulator, started with IAM
# enforced unless one that enforces IAM already answers there (an emulator you started with
# `make emulator` on 4566 is left alone). HOOKLEDGER_EMULATOR_PORT (4566): the dev target's
# emulator, started unless something already answers there, stopped afterwards if this script
# started it. HOOKLEDGER_DEMO_PAYMENTS (127.0.0.1:18090): where the demo's payments stub listens.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
port="${HOOKLEDGER_EMULATOR_PORT:-4566}"

target=stack
for a in "$@"; do
  case "$a" in
  --target=dev | dev) target=dev ;;
  -h | --help | -help) target=help ;;
  esac
done
prev=""
for a in "$@"; do
  if [[ "$prev" == "--target" && "$a" == "dev" ]]; then target=dev; fi
  prev="$a"
done

bash scripts/tools.sh deploy
if [[ "${HOOKLEDGER_DEMO_SNAPSHOT:-}" != 1 ]]; then
  # Build and deploy from a copy of the tree as it is now (tracked and new files, not ignored
  # ones), so that edits made while the demo runs change nothing it builds.
  snap="$root/.demo/src"
  rm -rf "$snap" && mkdir -p "$snap"
  git -C "$root" ls-files -z --cached --others --exclude-standard |
    tar -C "$root" --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -C "$snap" -xf -
  ln -s "$root/.venv" "$snap/.venv"
  HOOKLEDGER_DEMO_SNAPSHOT=1 exec bash "$snap/lab/scripts/demo.sh" "$@"
fi
mkdir -p bin
go build -tags crashpoints -o bin/proof/ ./cmd/hookledger ./lab/cmd/hooklab

if [[ "$target" == help ]]; then
  exec ./bin/proof/hooklab demo "$@"
fi

if [[ "$target" == dev ]]; then
  HOOKLEDGER_EMULATOR_PORT="$port" bash scripts/emulator.sh start
  trap 'HOOKLEDGER_EMULATOR_PORT="$port" bash scripts/emulator.sh release' EXIT
  AWS_ENDPOINT_URL="http://localhost:$port" ./bin/proof/hooklab demo "$@"
  exit
fi

payments="${HOOKLEDGER_DEMO_PAYMENTS:-127.0.0.1:18090}"
stripe_secret="whsec_demo_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
github_secret="gh_demo_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
sources=$(printf '{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:%s"]}}},"github":{"provider":"github","tenants":{"acme":{"secrets":["literal:%s"]}}}}' "$stripe_secret" "$github_secret")
params=$("$root/.venv/bin/python" -c 'import json,sys; print(json.dumps({
  "Stage": "demo", "SourcesConfig": sys.argv[1],
  "EffectSettings": json.dumps({"PAYMENTS_URL": "http://" + sys.argv[2], "NOTIFY_URL": "http://" + sys.argv[2]}),
  "EffectTimeoutSeconds": "10",
  "PipelineSettings": json.dumps({"HOOKLEDGER_RECLAIM_AFTER": "10s", "LOG_LEVEL": "info"})}))' "$sources" "$payments")

run="./bin/proof/hooklab demo --target stack --payments-addr $payments --stripe-secret $stripe_secret --github-secret $github_secret --timeout 6m"
for a in "$@"; do run+=" $(printf '%q' "$a")"; done

HOOKLEDGER_E2E_STACK=hookledger-demo HOOKLEDGER_E2E_TAGS=crashpoints \
  HOOKLEDGER_E2E_PARAMS="$params" HOOKLEDGER_E2E_RUN="$run" bash lab/scripts/e2e.sh
