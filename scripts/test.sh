#!/usr/bin/env bash
# make test: vet, unit and integration tests with -race against MiniStack
# (started here unless one already answers on :4566, stopped afterwards),
# brief fuzzing, the SAM template checks (offline), the deployed-stack
# end-to-end test (make e2e), the idempotency examples' (lab/scripts/e2e-examples.sh),
# and the upgrade and rollback from the previous release (make e2e-upgrade).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/tools.sh
bash scripts/emulator.sh start
trap 'bash scripts/emulator.sh release' EXIT
export HOOKLEDGER_TEST_ENDPOINT="http://localhost:${HOOKLEDGER_EMULATOR_PORT:-4566}"
export HOOKLEDGER_REQUIRE_EMULATOR=1
echo "== hygiene (tracked build outputs, large files, go mod tidy per module, the lab outside the product's graph, the idempotency module off the internals)"
bash scripts/hygiene.sh
echo "== go vet"
go vet ./... ./idempotency/... ./lab/...
go vet -tags crashpoints ./... ./idempotency/... ./lab/...
go vet -tags e2e ./lab/e2e/ ./idempotency/example/
go vet -tags upgrade ./lab/upgrade/
echo "== staticcheck"
.tools/bin/staticcheck ./... ./idempotency/... ./lab/...
.tools/bin/staticcheck -tags crashpoints ./... ./idempotency/... ./lab/...
.tools/bin/staticcheck -tags e2e ./lab/e2e/ ./idempotency/example/
.tools/bin/staticcheck -tags upgrade ./lab/upgrade/
echo "== go test -race: the product (unit and integration, against $HOOKLEDGER_TEST_ENDPOINT)"
go test -race -count=1 ./...
echo "== go test -race: the idempotency module (its own go.mod; ./... from the root does not enter it)"
go test -race -count=1 ./idempotency/...
echo "== go test -race -tags crashpoints (the crash points are live only in proof builds; idempotency crash points)"
go test -race -count=1 -tags crashpoints ./internal/inject/ ./idempotency/
echo "== go test -race: the proof lab (its sample effect, a short chaos run, the tools' own tests)"
go test -race -count=1 ./lab/...
echo "== brief fuzzing"
bash scripts/fuzz.sh "${HOOKLEDGER_FUZZTIME:-4000x}"
echo "== template lint (cfn-lint with serverless rules, sam validate --lint, checkov)"
bash scripts/lint.sh
echo "== deployed stack end to end (sam build, CloudFormation deploy into MiniStack with IAM enforced, secrets in SSM and Secrets Manager, role probes, signed webhooks, teardown)"
bash lab/scripts/e2e.sh
echo "== idempotency examples end to end (HTTP API and SQS consumer deployed into MiniStack on the same port)"
bash lab/scripts/e2e-examples.sh
echo "== upgrade and rollback (the previous release of lab/upgrade/previous deployed into MiniStack with IAM enforced, this tree over it and back, work in flight; a sam init project upgraded)"
go test -tags upgrade -count=1 -v -timeout 15m ./lab/upgrade/
