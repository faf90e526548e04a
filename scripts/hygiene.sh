#!/usr/bin/env bash
# make lint / make test: the repository's hygiene.
#   - no tracked build output (compiled binaries, build folders) and no tracked file over 1 MiB
#   - go mod tidy changes nothing, in every module (the product, the idempotency module, the proof lab)
#   - no package of the proof lab (lab/) in the product's dependency graph, tests included
#   - the idempotency module on the root module's public packages only: no internal/ package in
#     its dependencies, and none imported by its tests
#   - gofmt changes nothing
#   - the size budgets hold (go run ./lab/cmd/budget: product lines, one event's reading path, file
#     and function lengths, root exports, docs, no import pointing up a layer)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
fail=0
say() { echo "hygiene: $*" >&2; }

limit=$((1 << 20))
while IFS= read -r -d '' f; do
  [[ -f "$f" ]] || continue
  size=$(stat -c %s "$f")
  if ((size > limit)); then
    say "$f is tracked and $size bytes (over 1 MiB): keep large files out of the repository"
    fail=1
  fi
  case "$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')" in
  7f454c46 | cffaedfe | cefaedfe | 4d5a*) # ELF, Mach-O, PE
    say "$f is a tracked compiled binary: build outputs are never committed (git rm --cached '$f', and list it in .gitignore)"
    fail=1
    ;;
  esac
  case "$f" in
  bin/* | .aws-sam/* | .build/* | */bootstrap)
    say "$f is tracked build output: git rm --cached '$f'"
    fail=1
    ;;
  esac
done < <(git ls-files -z)

for mod in . idempotency lab; do
  if ! out=$(cd "$mod" && GOWORK=off GOFLAGS=-mod=mod go mod tidy -diff 2>&1); then
    say "go mod tidy is not clean in $mod/ (run: (cd $mod && GOWORK=off go mod tidy)):"
    echo "$out" >&2
    fail=1
  fi
done

if lab=$(go list -deps -test ./... ./idempotency/... | grep '^github.com/hookledger/hookledger/lab\(/\|$\)'); then
  say "the product depends on the proof lab (no product package, test or not, may import lab/):"
  echo "$lab" | sed 's/^/  /' >&2
  fail=1
fi

internal='^github.com/hookledger/hookledger/internal/'
if deps=$(go list -deps ./idempotency/... | grep "$internal"); then
  say "the idempotency module depends on the root module's internal packages (it may use public ones, such as dynamo):"
  echo "$deps" | sed 's/^/  /' >&2
  fail=1
fi
if imps=$(go list -test -f '{{join .Imports "\n"}}' ./idempotency/... | grep "$internal"); then
  say "an idempotency test imports the root module's internal packages (the module's tests keep their helpers in helpers_test.go):"
  echo "$imps" | sort -u | sed 's/^/  /' >&2
  fail=1
fi

if unformatted=$(gofmt -l $(git ls-files '*.go')) && [[ -n "$unformatted" ]]; then
  say "gofmt would change these files (run: gofmt -w <file>):"
  echo "$unformatted" | sed 's/^/  /' >&2
  fail=1
fi

if ! out=$(go run ./lab/cmd/budget --check 2>&1); then
  say "a size budget is exceeded (shrink it, or raise the budget in lab/cmd/budget in a commit that says why):"
  echo "$out" | grep -E 'OVER|budget:' | sed 's/^/  /' >&2
  fail=1
fi

if ((fail)); then exit 1; fi
say "ok"
