#!/usr/bin/env bash
# Installs the deployment tools, pinned, into two virtualenvs under .venv:
#
#   .venv      MiniStack (the emulator) and what it needs to expand the SAM transform
#              (aws-sam-translator), plus boto3 for lab/scripts/e2e.sh. MiniStack pins botocore
#              exactly, so this environment keeps MiniStack's botocore.
#   .venv/sam  SAM CLI and cfn-lint. SAM CLI pins a newer boto3/botocore than MiniStack allows,
#              so the two cannot share one environment.
#   .venv/checkov  checkov (template security checks); its own pins again.
#   .tools/bin staticcheck, built from its pinned module version with the project's Go.
#   chromium   the browser the console's test drives (lab/browser), from the distribution's
#              packages (apt-get install chromium) when none is on PATH.
#
# Idempotent: a stamp file records the pins each environment was built with; a run whose pins
# match does nothing. Needs python3 (3.9+) with venv, and PyPI.
#
#   scripts/tools.sh             everything (make test, make lint)
#   scripts/tools.sh emulator    only .venv (enough for tests against MiniStack; skips the rest)
#   scripts/tools.sh deploy      .venv and .venv/sam: what a deploy into the emulator runs
#                                (make demo, make e2e), without the linters
#   scripts/tools.sh browser     only chromium
#   scripts/tools.sh -v          everything, then print the installed versions
#
# HOOKLEDGER_TOOLS_ROOT puts .venv and .tools in another folder than this repository: a
# project's, when hookledger local runs this script from the module cache (read-only).
set -euo pipefail

root="${HOOKLEDGER_TOOLS_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
venv="$root/.venv"
samvenv="$venv/sam"

# Emulator environment. botocore/boto3 match ministack's own pin.
emu_pins=(
  ministack==1.5.33
  aws-sam-translator==1.115.0
  botocore==1.43.106
  boto3==1.43.106
)
# Tooling environment. aws-sam-translator matches aws-sam-cli's pin; cfn-lint-serverless adds
# the serverless rule set (ES*/LAMBDA_*/SQS_* rules) to cfn-lint.
sam_pins=(
  aws-sam-cli==1.170.0
  aws-sam-translator==1.115.0
  cfn-lint==1.58.0
  cfn-lint-serverless==0.3.6
)
checkov_pins=(
  checkov==3.3.30
)
# Go tools: module@version, installed into .tools/bin by `go install` (the Go module proxy).
go_tools=(
  honnef.co/go/tools/cmd/staticcheck@v0.8.2
)

ensure() { # ensure DIR PIN...
  local dir="$1"; shift
  local stamp="$dir/.hookledger-tools" want
  want="$(printf '%s\n' "$@")"
  if [[ -x "$dir/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  if [[ ! -x "$dir/bin/python" ]]; then
    echo "tools: creating $dir" >&2
    python3 -m venv "$dir"
  fi
  echo "tools: installing into $dir: $*" >&2
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
  printf '%s\n' "$want" > "$stamp"
}

# ensure_browser installs Chromium from the distribution's packages unless one is on PATH.
ensure_browser() {
  if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
    return 0
  fi
  if ! command -v apt-get >/dev/null; then
    echo "tools: no chromium on PATH and no apt-get to install it: install Chromium with your system's packages (the console's browser test, lab/browser, needs it)" >&2
    return 1
  fi
  local sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    if ! command -v sudo >/dev/null; then
      echo "tools: chromium is missing and installing it needs root: run as root, or sudo apt-get install -y chromium" >&2
      return 1
    fi
    sudo=(sudo)
  fi
  echo "tools: installing chromium (apt-get)" >&2
  "${sudo[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq chromium >/dev/null
}

if [[ "${1:-}" == "browser" ]]; then
  ensure_browser
  exit
fi
ensure "$venv" "${emu_pins[@]}"
if [[ "${1:-}" == "emulator" ]]; then
  exit 0
fi
ensure "$samvenv" "${sam_pins[@]}"
if [[ "${1:-}" == "deploy" ]]; then
  exit 0
fi
ensure "$venv/checkov" "${checkov_pins[@]}"

ensure_browser

gobin="$root/.tools/bin"
stamp="$gobin/.hookledger-tools"
want="$(printf '%s\n' "${go_tools[@]}")"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  mkdir -p "$gobin"
  echo "tools: go install into $gobin: ${go_tools[*]}" >&2
  for t in "${go_tools[@]}"; do
    GOBIN="$gobin" go install "$t"
  done
  printf '%s\n' "$want" > "$stamp"
fi

if [[ "${1:-}" == "-v" ]]; then
  "$venv/bin/python" -m pip list --disable-pip-version-check 2>/dev/null | grep -Ei '^(ministack|aws-sam-translator|boto3|botocore) '
  "$samvenv/bin/sam" --version
  "$samvenv/bin/cfn-lint" --version
  "$venv/checkov/bin/checkov" --version
  "$gobin/staticcheck" -version
  chromium --version 2>/dev/null || chromium-browser --version
fi
