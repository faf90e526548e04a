#!/usr/bin/env bash
# Installs the comparison's Python tools, pinned, into .venv/bench: Powertools
# for AWS Lambda (Python) and the boto3/botocore that MiniStack itself pins
# (scripts/tools.sh), so both sides speak the same protocol version.
# HOOKLEDGER_BENCH_VENV puts them elsewhere (a worktree whose .venv is a
# shared symlink must not write into it); scripts/bench.sh honours it too.
# Idempotent: a stamp file records the pins; a run whose pins match does nothing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${HOOKLEDGER_BENCH_VENV:-$root/.venv/bench}"
pins=(
  aws-lambda-powertools==3.37.0
  boto3==1.43.106
  botocore==1.43.106
)
stamp="$dir/.hookledger-tools"
want="$(printf '%s\n' "${pins[@]}")"
if [[ -x "$dir/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi
if [[ ! -x "$dir/bin/python" ]]; then
  echo "bench tools: creating $dir" >&2
  python3 -m venv "$dir"
fi
echo "bench tools: installing into $dir: ${pins[*]}" >&2
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}"
printf '%s\n' "$want" >"$stamp"
