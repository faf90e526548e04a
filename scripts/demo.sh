#!/usr/bin/env bash
# make demo: install the pinned emulator, start it unless one answers on
# :4566, build hookledger with crash points, run `hookledger demo`, and stop
# what was started. Extra arguments go to `hookledger demo` (try --help).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/tools.sh
bash scripts/emulator.sh start
trap 'bash scripts/emulator.sh stop' EXIT
mkdir -p bin
go build -tags crashpoints -o bin/hookledger-demo ./cmd/hookledger
AWS_ENDPOINT_URL="http://localhost:${HOOKLEDGER_EMULATOR_PORT:-4566}" ./bin/hookledger-demo demo "$@"
