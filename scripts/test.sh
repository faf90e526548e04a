#!/usr/bin/env bash
# make test: vet, unit and integration tests with -race against MiniStack
# (started here unless one already answers on :4566, stopped afterwards),
# brief fuzzing, the SAM template checks (offline), the deployed-stack
# end-to-end test (make e2e) and the idempotency examples' (scripts/e2e-examples.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/tools.sh
bash scripts/emulator.sh start
trap 'bash scripts/emulator.sh release' EXIT
export HOOKLEDGER_TEST_ENDPOINT="http://localhost:${HOOKLEDGER_EMULATOR_PORT:-4566}"
export HOOKLEDGER_REQUIRE_EMULATOR=1
echo "== go vet"
go vet ./...
go vet -tags crashpoints ./...
go vet -tags e2e ./e2e/ ./examples/idempotency/
echo "== staticcheck"
.tools/bin/staticcheck ./...
.tools/bin/staticcheck -tags crashpoints ./...
.tools/bin/staticcheck -tags e2e ./e2e/ ./examples/idempotency/
echo "== go test -race (unit and integration, against $HOOKLEDGER_TEST_ENDPOINT)"
go test -race -count=1 ./...
echo "== go test -race -tags crashpoints (the injection hooks are live only in proof builds; idempotency crash points)"
go test -race -count=1 -tags crashpoints ./internal/inject/ ./idempotency/
echo "== brief fuzzing"
bash scripts/fuzz.sh "${HOOKLEDGER_FUZZTIME:-4000x}"
echo "== template lint (cfn-lint with serverless rules, sam validate --lint, checkov)"
bash scripts/lint.sh
echo "== deployed stack end to end (sam build, CloudFormation deploy into MiniStack with IAM enforced, secrets in SSM and Secrets Manager, role probes, signed webhooks, teardown)"
bash scripts/e2e.sh
echo "== idempotency examples end to end (HTTP API and SQS consumer deployed into MiniStack on the same port)"
bash scripts/e2e-examples.sh
