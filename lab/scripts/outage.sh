#!/usr/bin/env bash
# make outage: deliveries lost in a simulated outage (endpoint down, a secret the receiver does not
# have), healed by `hookledger reconcile` against local Stripe and GitHub API stand-ins; the
# payments stub checks that every invoice was charged exactly once (docs/reconcile.md). Then
# `hooklab queue-outage`: the queue loses every message for three hours by an injected clock, and
# every event must be done within two minutes of its return (docs/recovery.md).
#
# Environment: HOOKLEDGER_EMULATOR_PORT (4566): the emulator's port; it is started unless
# something already answers there, and stopped afterwards if this script started it.
# ARGS go to `hooklab outage` (try ARGS=--help).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
port="${HOOKLEDGER_EMULATOR_PORT:-4566}"
bash scripts/tools.sh emulator
go build -o bin/outage/ ./cmd/hookledger ./lab/cmd/hooklab
for a in "$@"; do
  case "$a" in -h | --help | -help) exec ./bin/outage/hooklab outage "$@" ;; esac
done
HOOKLEDGER_EMULATOR_PORT="$port" bash scripts/emulator.sh start
trap 'HOOKLEDGER_EMULATOR_PORT="$port" bash scripts/emulator.sh release' EXIT
AWS_ENDPOINT_URL="http://localhost:$port" ./bin/outage/hooklab outage "$@"
echo
AWS_ENDPOINT_URL="http://localhost:$port" ./bin/outage/hooklab queue-outage
