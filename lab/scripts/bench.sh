#!/usr/bin/env bash
# make bench: price and time every event. Installs the pinned tools (MiniStack
# in .venv, Powertools in .venv/bench or $HOOKLEDGER_BENCH_VENV), starts MiniStack on
# HOOKLEDGER_EMULATOR_PORT (default 4599) unless something answers there,
# runs the Go micro-benchmarks (-count BENCH_COUNT, default 5), then
# `hooklab bench` (accounting, cost, comparison, cold start, throughput),
# prints every table as Markdown, and stops the emulator it started.
# Arguments go to `hooklab bench` (try --help); output is also kept in
# bin/bench/report.md. With --only, the Go micro-benchmarks are skipped, and
# Powertools is installed only for the compare section, e.g.
# `make bench ARGS="--only recovery"` runs just the recovery section.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
for a in "$@"; do
  if [[ "$a" == "-h" || "$a" == "--help" || "$a" == "-help" ]]; then
    go run ./lab/cmd/hooklab bench --help
    exit 0
  fi
done
only="" prev=""
for a in "$@"; do
  case "$a" in --only=* | -only=*) only="${a#*=}" ;; esac
  if [[ "$prev" == "--only" || "$prev" == "-only" ]]; then only="$a"; fi
  prev="$a"
done
export HOOKLEDGER_EMULATOR_PORT="${HOOKLEDGER_EMULATOR_PORT:-4599}"
bash scripts/tools.sh emulator
if [[ -z "$only" || ",$only," == *",compare,"* ]]; then bash lab/scripts/bench_tools.sh; fi
bash scripts/emulator.sh start
trap 'bash scripts/emulator.sh release' EXIT
mkdir -p bin/bench
gobench=()
if [[ -z "$only" ]]; then
  echo "bench: go micro-benchmarks (-count ${BENCH_COUNT:-5})…" >&2
  go test -run '^$' -bench . -benchmem -count "${BENCH_COUNT:-5}" -benchtime "${BENCH_TIME:-300x}" \
    ./webhook ./ledger ./internal/receiver ./internal/processor ./lab/reconcile ./idempotency >bin/bench/go-bench.txt
  gobench=(--go-bench bin/bench/go-bench.txt)
fi
go build -o bin/bench/hooklab ./lab/cmd/hooklab
./bin/bench/hooklab bench --endpoint "http://localhost:$HOOKLEDGER_EMULATOR_PORT" "${gobench[@]}" \
  --python "${HOOKLEDGER_BENCH_VENV:-.venv/bench}/bin/python" "$@" | tee bin/bench/report.md
