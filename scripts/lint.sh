#!/usr/bin/env bash
# Lints template.yaml offline: cfn-lint (SAM transform expanded, plus the serverless rules of
# cfn-lint-serverless), `sam validate --lint` and checkov (security checks; the findings the
# template accepts are skipped by id below, each argued in docs/deploy.md, "checkov").
# Dummy credentials and a fixed region so that nothing here can reach AWS. Run
# scripts/tools.sh first (make lint-template does).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/.venv/sam/bin"
template="${1:-$root/template.yaml}"

checkov="$root/.venv/checkov/bin/checkov"
if [[ ! -x "$bin/cfn-lint" || ! -x "$bin/sam" || ! -x "$checkov" ]]; then
  echo "lint: tools missing; run scripts/tools.sh" >&2
  exit 2
fi

export AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=lint AWS_SECRET_ACCESS_KEY=lint AWS_SESSION_TOKEN=
unset AWS_PROFILE AWS_ENDPOINT_URL
export SAM_CLI_TELEMETRY=0

echo "lint: cfn-lint $("$bin/cfn-lint" --version | awk '{print $2}') on ${template#"$root"/}"
"$bin/cfn-lint" --regions us-east-1 --append-rules cfn_lint_serverless.rules -- "$template"

echo "lint: sam validate --lint"
(cd "$root" && "$bin/sam" validate --lint --template-file "$template" --region us-east-1)
# Accepted findings (docs/deploy.md, "checkov"): customer-managed KMS keys for the table, the
# log groups, the environment and the alarm topic (CKV_AWS_119, CKV_AWS_158, CKV_AWS_173,
# CKV_AWS_26); SQS encryption, which SqsManagedSseEnabled provides (CKV_AWS_27); Lambda DLQs,
# VPCs and reserved concurrency (CKV_AWS_116, CKV_AWS_117, CKV_AWS_115).
echo "lint: checkov $("$checkov" --version)"
skips=CKV_AWS_119,CKV_AWS_158,CKV_AWS_173,CKV_AWS_26,CKV_AWS_27,CKV_AWS_116,CKV_AWS_117,CKV_AWS_115
# checkov runs from the template's folder on its bare file name: when it merges SAM's Globals
# into each function it leaves its own __file__ key among Environment.Variables, and CKV_AWS_45
# (hard-coded secrets) then judges the file's path, which some absolute paths fail.
checkov_on() { (cd "$(dirname "$1")" && "$checkov" --quiet --compact --skip-download --framework cloudformation -f "$(basename "$1")" --skip-check "$skips"); }
checkov_on "$template"
# checkov evaluates conditions with the parameters' defaults, so the optional resources (the
# function URL front door, the S3 payload store, the secret grants, the reconciler, the bus door and
# the forward bus) are only seen in a copy whose
# defaults turn them all on (templates without those parameters: nothing to add).
if grep -q '^  FrontDoor:$' "$template"; then
  bothdir="$(mktemp -d)"
  trap 'rm -rf "$bothdir"' EXIT
  both="$bothdir/template.yaml"
  sed -e '/^  FrontDoor:$/,/^  [A-Za-z]*:$/ s/^    Default: HttpApi$/    Default: Both/' \
    -e '/^  LargeBodyStoreDays:$/,/^  [A-Za-z]*:$/ s/^    Default: 0$/    Default: 14/' \
    -e '/^  SecretsPrefix:$/,/^  [A-Za-z]*:$/ s/^    Default: ""$/    Default: hookledger\/lint/' \
    -e '/^  ReconcileConfig:$/,/^  [A-Za-z]*:$/ s/^    Default: "\[\]"$/    Default: '"'"'[{"source":"stripe","tenant":"acme","credential":"ssm:\/x\/reconcile\/k"}]'"'"'/' \
    -e '/^  InboundEventBus:$/,/^  [A-Za-z]*:$/ s/^    Default: ""$/    Default: lint-inbound/' \
    -e '/^  ForwardEventBus:$/,/^  [A-Za-z]*:$/ s/^    Default: ""$/    Default: lint-forward/' \
    -e '/^  Tracing:$/,/^  [A-Za-z]*:$/ s/^    Default: "Off"$/    Default: XRay/' "$template" >"$both"
  for want in '^    Default: Both$' '^    Default: 14$' '^    Default: hookledger/lint$' '^    Default: .\[{"source"' \
    '^    Default: lint-inbound$' '^    Default: lint-forward$' '^    Default: XRay$'; do
    grep -q "$want" "$both" || { echo "lint: could not make the every-option copy ($want)" >&2; exit 1; }
  done
  echo "lint: checkov with every option on (FrontDoor=Both, LargeBodyStoreDays=14, SecretsPrefix, ReconcileConfig listing a source, InboundEventBus, ForwardEventBus, Tracing=XRay)"
  checkov_on "$both"
fi
echo "lint: ok"
