#!/usr/bin/env bash
# make chaos: install the pinned emulator, start it unless one answers on the
# port (HOOKLEDGER_EMULATOR_PORT, default 4566), build hookledger with crash
# points and fault injection, run `hooklab chaos`, and stop what was
# started. Extra arguments go to `hooklab chaos` (try --help), e.g.
#
#   make chaos ARGS="--deliveries 12000"
#   make chaos ARGS="--kinds crash,aws --seed 42"
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
port="${HOOKLEDGER_EMULATOR_PORT:-4566}"
bash scripts/tools.sh emulator
bash scripts/emulator.sh start
trap 'bash scripts/emulator.sh release' EXIT
mkdir -p bin
go build -tags crashpoints -o bin/proof/ ./cmd/hookledger ./lab/cmd/hooklab
AWS_ENDPOINT_URL="http://localhost:$port" ./bin/proof/hooklab chaos "$@"
