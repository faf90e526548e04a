# hookledger: the two commands are `make demo` and `make test`.
.PHONY: all build test lint demo outage chaos bench fuzz tools emulator emulator-stop fmt clean

GO ?= go

all: build

## build: the CLI (bin/hookledger) and the Lambda binaries for linux/arm64
build:
	$(GO) build -trimpath -o bin/hookledger ./cmd/hookledger
	for f in receiver processor reclaimer reconciler bus; do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -tags lambda.norpc -ldflags="-s -w" -o bin/lambda/$$f/bootstrap ./functions/$$f || exit 1; \
	done

## test: everything: hygiene, vet, staticcheck, unit + integration tests (-race) against MiniStack, the lab, fuzzing, template lint, the deployed stack end to end
test:
	bash scripts/test.sh

## lint: go vet and staticcheck (all build tags), and the template checks (cfn-lint with serverless rules, sam validate --lint, checkov)
lint: lint-template
	bash scripts/hygiene.sh
	$(GO) vet ./... ./idempotency/... ./lab/...
	$(GO) vet -tags crashpoints ./... ./idempotency/... ./lab/...
	$(GO) vet -tags e2e ./lab/e2e/ ./idempotency/example/
	$(GO) vet -tags upgrade ./lab/upgrade/
	.tools/bin/staticcheck ./... ./idempotency/... ./lab/...
	.tools/bin/staticcheck -tags crashpoints ./... ./idempotency/... ./lab/...
	.tools/bin/staticcheck -tags e2e ./lab/e2e/ ./idempotency/example/
	.tools/bin/staticcheck -tags upgrade ./lab/upgrade/

## demo: the pipeline end to end on this machine, with duplicates and a crash
demo:
	bash lab/scripts/demo.sh $(ARGS)

## outage: deliveries lost in an outage, healed by hookledger reconcile; messages the queue lost, recovered by the reclaimer
outage:
	bash lab/scripts/outage.sh $(ARGS)

## chaos: the fault-injection harness (crashes, duplicates, AWS faults) with an independent oracle
chaos:
	bash lab/scripts/chaos.sh $(ARGS)

## bench: speed, request, write-unit and cost numbers per event
bench:
	bash lab/scripts/bench.sh $(ARGS)

## fuzz: every fuzz target for 60s each
fuzz:
	bash scripts/fuzz.sh 60s

## tools: the pinned tools: MiniStack, SAM CLI, cfn-lint, checkov in .venv; staticcheck in .tools/bin
tools:
	bash scripts/tools.sh

## emulator / emulator-stop: MiniStack on :4566 for manual runs
emulator: tools
	bash scripts/emulator.sh start
emulator-stop:
	bash scripts/emulator.sh stop

fmt:
	gofmt -w $$(git ls-files "*.go")

clean:
	rm -rf bin .demo .ministack

-include mk/deploy.mk
