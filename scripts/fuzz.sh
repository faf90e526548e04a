#!/usr/bin/env bash
# Runs every Go fuzz target in the repository's tracked and new files (not ignored
# copies such as make demo's snapshot) for a while each.
#   scripts/fuzz.sh [DURATION]   (default 3s; make fuzz uses 60s)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
time="${1:-3s}"  # a duration (10s) or a count of runs (5000x)
count=0
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
while IFS=: read -r file name; do
  pkg="./$(dirname "$file")"
  echo "fuzz: $name in $pkg for $time"
  go test -run='^$' -fuzz="^${name}\$" -fuzztime="$time" -parallel="${FUZZ_PARALLEL:-1}" "$pkg" >"$log" 2>&1 || { cat "$log"; exit 1; }
  count=$((count + 1))
done < <(git ls-files -z --cached --others --exclude-standard '*_test.go' | xargs -0 grep -HoE '^func (Fuzz[A-Za-z0-9_]+)' | sed -E 's/func //')
echo "fuzz: $count targets ran without a failure"
[[ $count -gt 0 ]]
