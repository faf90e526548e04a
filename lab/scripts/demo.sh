#!/usr/bin/env bash
# make demo: the pipeline end to end on this machine, with duplicates and a crash.
#
# By default it deploys template.yaml into MiniStack (the same deploy as make e2e, built with
# crash points) and drives the deployed Lambdas through the HTTP API: the API Gateway route,
# the receiver, SQS and its event source, the processor, and the scheduled reclaimer.
# `make demo ARGS="--target dev"` runs the same handlers in `hookledger dev` processes instead
# (seconds instead of minutes; handy when debugging). Other ARGS go to `hooklab demo`
# (try ARGS=--help).
#
# The stack target deploys through scripts/e2e.sh, so it runs under enforced IAM (MiniStack with
# AUTH=true; the functions use their roles' credentials).
#
# Environment: HOOKLEDGER_EMULATOR_PORT (4566): the emulator's port; it is started unless
# something already answers there, and stopped afterwards if this script started it. The stack
# target uses HOOKLEDGER_E2E_PORT instead when it is set (an emulator there must enforce IAM).
# HOOKLEDGER_DEMO_PAYMENTS (127.0.0.1:18090): where the demo's payments stub listens.
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

bash scripts/tools.sh
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
  "ProcessorTimeout": "10", "ReclaimAfter": "10s", "MaxReceiveCount": 10, "LogLevel": "info"}))' "$sources" "$payments")

run="./bin/proof/hooklab demo --target stack --payments-addr $payments --stripe-secret $stripe_secret --github-secret $github_secret --timeout 6m"
for a in "$@"; do run+=" $(printf '%q' "$a")"; done

HOOKLEDGER_E2E_PORT="${HOOKLEDGER_E2E_PORT:-$port}" HOOKLEDGER_E2E_STACK=hookledger-demo HOOKLEDGER_E2E_TAGS=crashpoints \
  HOOKLEDGER_E2E_PARAMS="$params" HOOKLEDGER_E2E_RUN="$run" bash lab/scripts/e2e.sh
