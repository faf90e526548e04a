# Deployment targets; included by the Makefile. Variables here all start with DEPLOY_.
#
#   make lint-template   cfn-lint (with serverless rules) and sam validate --lint, offline
#   make sam-build       sam build with small binaries (-trimpath, stripped, lambda.norpc)
#   make e2e             deploy template.yaml into MiniStack, drive it, assert, tear down
#   make e2e-examples    the same for the idempotency examples (idempotency/example)
#   make e2e-upgrade     the previous release (lab/upgrade/previous) deployed, upgraded to this tree
#                        and rolled back with work in flight; a sam init project upgraded
#   make local           deploy this repository, effect/ as it is, into MiniStack with IAM enforced
#                        (samconfig.toml's [local] section), send signed test events, list the ledger;
#                        the stack stays up until make local-down
#
# DEPLOY_ARCH picks the Lambda architecture sam-build compiles for (arm64 on AWS). e2e always
# builds x86_64: MiniStack runs provided.al2023 bootstraps as processes on this host.

DEPLOY_ROOT := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST))/..)))
DEPLOY_SAM ?= $(DEPLOY_ROOT)/.venv/sam/bin/sam
DEPLOY_ARCH ?= arm64
# GOFLAGS entries are space-separated; a quoted entry may hold spaces. -trimpath comes from the
# template (TrimGoPath), the rest from here; CGO off so the binary has no libc dependency.
DEPLOY_GOFLAGS ?= -tags=lambda.norpc '-ldflags=-s -w'

.PHONY: lint-template sam-build e2e e2e-examples e2e-upgrade deploy-tools local local-down

deploy-tools:
	bash $(DEPLOY_ROOT)/scripts/tools.sh

lint-template: deploy-tools
	bash $(DEPLOY_ROOT)/scripts/lint.sh

sam-build: deploy-tools
	cd $(DEPLOY_ROOT) && SAM_CLI_TELEMETRY=0 CGO_ENABLED=0 GOFLAGS="$(DEPLOY_GOFLAGS)" \
	  $(DEPLOY_SAM) build --parameter-overrides Architecture=$(DEPLOY_ARCH)
	@ls -l $(DEPLOY_ROOT)/.aws-sam/build/*/bootstrap

e2e: deploy-tools
	bash $(DEPLOY_ROOT)/lab/scripts/e2e.sh

e2e-examples: deploy-tools
	bash $(DEPLOY_ROOT)/lab/scripts/e2e-examples.sh

e2e-upgrade: deploy-tools
	cd $(DEPLOY_ROOT) && go test -tags upgrade -count=1 -v -timeout 15m ./lab/upgrade/

local:
	cd $(DEPLOY_ROOT) && go run ./cmd/hookledger local

local-down:
	cd $(DEPLOY_ROOT) && go run ./cmd/hookledger local --down
