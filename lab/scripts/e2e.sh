#!/usr/bin/env bash
# End-to-end run of template.yaml in MiniStack, offline:
#   1. sam build (x86_64: MiniStack runs provided.al2023 bootstraps as host processes)
#   2. start MiniStack on 127.0.0.1:$HOOKLEDGER_E2E_PORT (4577) with IAM enforced (AUTH=true)
#      unless one already answers there; a running one is used only if it enforces IAM too
#   3. store the signing secrets in SSM Parameter Store and Secrets Manager, under the
#      SecretsPrefix of samconfig.toml's dev section, and sam deploy the stack with it
#      (CloudFormation with the SAM transform, S3 artifacts); the functions then run with
#      their roles' credentials and every AWS call they make is checked against the template
#   4. go test ./lab/e2e: IAM enforcement probed role by role (every granted action allowed, the
#      rest denied), signed webhooks through both front doors (FrontDoor=Both: the HTTP API and
#      the receiver's function URL) with secrets from both stores (new, duplicate, 20
#      concurrent, rejections, a URL-signing provider, a throttled receiver), the SQS event
#      source running the processor, the schedule running the reclaimer, assertions on the
#      ledger (per-source retention included), the payments stub and the DLQ; the EventBridge
#      doors: a custom bus stands in for Stripe's partner event bus (InboundEventBus), another
#      is the forward bus (ForwardEventBus) with a rule to a consumer queue the test reads
#   5. delete the stack and the retained ledger table; stop the emulator if this script started it
# Nothing here can reach AWS: every client gets AWS_ENDPOINT_URL and dummy credentials.
#
# Environment: HOOKLEDGER_E2E_PORT (4577), HOOKLEDGER_E2E_STACK (hookledger-e2e),
# HOOKLEDGER_E2E_KEEP=1 keeps the stack and the emulator for poking at afterwards.
# make demo reuses this script to deploy the same stack: HOOKLEDGER_E2E_TAGS adds Go build tags
# (crashpoints), HOOKLEDGER_E2E_PARAMS is a JSON object of extra template parameters, and
# HOOKLEDGER_E2E_RUN replaces step 4 with a command that gets the same HOOKLEDGER_E2E_* variables;
# no payments stub is started then: the command serves its own and points the effect at it with
# EffectSettings in HOOKLEDGER_E2E_PARAMS, as make demo does.
# --help prints this.
set -euo pipefail
case "${1:-}" in
  -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
# The deploy steps hookledger local takes too (stack_build, stack_emulator, stack_deploy, ...).
# shellcheck source=../../scripts/local.sh
source "$root/scripts/local.sh"
port="${HOOKLEDGER_E2E_PORT:-4577}"
stack="${HOOKLEDGER_E2E_STACK:-hookledger-e2e}"
keep="${HOOKLEDGER_E2E_KEEP:-0}"
endpoint="http://localhost:$port"
build_dir="$root/.aws-sam/$stack"
state_dir="$root/.ministack"
py="$root/.venv/bin/python"
secret="whsec_e2e_$(date +%s)"


log() { echo "e2e: $*" >&2; }

bash "$root/scripts/tools.sh" deploy

for fn in receiver processor reclaimer bus; do
  if [[ ! -f "$root/functions/$fn/main.go" ]]; then
    log "functions/$fn/main.go is missing: nothing to deploy yet"
    exit 1
  fi
done

# Everything below talks to the emulator only.
stack_env "$endpoint"

# ---------------------------------------------------------------- build
log "sam build (x86_64) into ${build_dir#"$root"/}"
stack_build "$root" "$build_dir" "${HOOKLEDGER_E2E_TAGS:-}"
# The lab proves the pipeline with its own copy of the sample effect, whatever effect/ holds: the
# processor built from lab/functions/processor (same flags) replaces the template's before the deploy.
CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -tags "lambda.norpc${HOOKLEDGER_E2E_TAGS:+,$HOOKLEDGER_E2E_TAGS}" \
  -ldflags="-s -w" -o "$build_dir/ProcessorFunction/bootstrap" ./lab/functions/processor
for fn in Receiver Processor Reclaimer Bus; do
  printf 'e2e: %-9s bootstrap %8d bytes\n' "$fn" "$(stat -c %s "$build_dir/${fn}Function/bootstrap")" >&2
done

# ---------------------------------------------------------------- emulator
stack_emulator_pid="" # the MiniStack this script started, if it did

cleanup() {
  local rc=$?
  set +e
  [[ -n "${payments_pid:-}" ]] && kill "$payments_pid" 2>/dev/null
  if [[ "$keep" == 1 ]]; then
    log "HOOKLEDGER_E2E_KEEP=1: leaving stack $stack${stack_emulator_pid:+ and MiniStack (pid $stack_emulator_pid)} on $endpoint"
    exit "$rc"
  fi
  if [[ -n "$stack_emulator_pid" ]] && ! kill -0 "$stack_emulator_pid" 2>/dev/null; then
    log "MiniStack (pid $stack_emulator_pid) is gone: something outside this script stopped it during the run" \
      "(see ${state_dir#"$root"/}/e2e-$port.log); its state went with it, nothing left to delete"
    deployed="" stack_emulator_pid=""
    rc=1
  fi
  if [[ -n "${deployed:-}" ]]; then
    stack_delete "$root" "$stack" "$build_dir" || rc=1
  fi
  if [[ -n "$stack_emulator_pid" ]]; then
    log "stopping MiniStack (pid $stack_emulator_pid)"
    stack_stop "$stack_emulator_pid"
  fi
  exit "$rc"
}
trap cleanup EXIT

mkdir -p "$state_dir"
stack_emulator "$root" "$port" "$state_dir/e2e-$port.log"

# ---------------------------------------------------------------- payments stub
# The shipped effect charges through a payments API and notifies through a notification API;
# the deployed processor (a host process under MiniStack) reaches this stub (both APIs) on
# loopback, and the test reads its counts.
payments_port="${HOOKLEDGER_E2E_PAYMENTS_PORT:-$((port + 1000))}"
if [[ -z "${HOOKLEDGER_E2E_RUN:-}" ]]; then
  go build -o "$build_dir/hooklab" ./lab/cmd/hooklab
  "$build_dir/hooklab" payments --addr "127.0.0.1:$payments_port" >"$build_dir/payments.log" 2>&1 &
  payments_pid=$!
fi

# ---------------------------------------------------------------- secrets and deploy
# The signing secrets live where docs/deploy.md tells users to keep them, referenced the way it
# shows, under samconfig.toml's dev section's SecretsPrefix: stripe/acme in SSM Parameter Store
# (SecureString), stripe/globex in Secrets Manager by name, github/acme in Secrets Manager
# referenced by its ARN without the random suffix (the prefix grant must still cover the real,
# suffixed ARN), square/acme in SSM (a provider that signs the URL, driven through the function
# URL). The effect's PAYMENTS_URL is an ssm: reference the processor reads at cold start, and the
# reconciler's API credential lives under the prefix's reconcile/ path, which only its role reads.
# RetentionDays is 2 so that the per-source rule shows: stripe's default is raised to its retry
# horizon (3 days) plus a day, github keeps its own "retention" of 240h.
# Parameters go through a file: the JSON values have quotes, which the Key=Value form of
# --parameter-overrides would strip.
# The reconciler asks a Stripe stand-in that the e2e test serves on this port (docs/reconcile.md).
# The EventBridge doors (docs/eventbridge.md): MiniStack cannot deliver a partner event source's
# events (PutPartnerEvents answers and drops them) and PutEvents refuses aws.* sources, so a custom
# bus, <stack>-stripe, stands in for Stripe's partner event bus, its events carrying the source
# e2e.stripe; the stripe source takes them for platform, a tenant without an HTTP door (a custom
# bus is not Stripe's partner event source, so acme, which signs, may take none of its events).
# The forward bus, <stack>-out, has a rule to the queue <stack>-forwarded, the consumer the test
# reads. The lab's effect fetches thin events' objects from the same Stripe stand-in, with an
# API key kept as a secret under the prefix (not reconcile/, which the processor is denied).
providers_port="${HOOKLEDGER_E2E_PROVIDERS_PORT:-$((port + 1002))}"
eval "$("$py" - "$build_dir/params.yaml" "$secret" "${HOOKLEDGER_E2E_PARAMS:-{\}}" "$endpoint" "$payments_port" "$root/samconfig.toml" "$stack" "$providers_port" <<'EOF'
import json, shlex, sys, tomllib, boto3
path, secret, extra, endpoint, payments_port, samconfig, stack = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7]
providers_port = sys.argv[8]
with open(samconfig, "rb") as f:
    dev = dict(o.split("=", 1) for o in tomllib.load(f)["dev"]["deploy"]["parameters"]["parameter_overrides"])
prefix = dev["SecretsPrefix"]
acme_ref = f"ssm:/{prefix}/stripe/acme"
globex_ref = f"secretsmanager:{prefix}/stripe/globex"
github_name = f"{prefix}/github/{stack}-acme"
globex_secret, github_secret, square_secret = secret + "_globex", "gh_" + secret, "sq_" + secret
square_ref = f"ssm:/{prefix}/square/acme"
ssm, sm = boto3.client("ssm"), boto3.client("secretsmanager")
ssm.put_parameter(Name=acme_ref[4:], Value=secret, Type="SecureString", Overwrite=True)
ssm.put_parameter(Name=square_ref[4:], Value=square_secret, Type="SecureString", Overwrite=True)
# An effect setting kept as a secret: the processor reads it at cold start, within the prefix.
payments_ref = f"ssm:/{prefix}/{stack}/payments-url"
ssm.put_parameter(Name=payments_ref[4:], Value=f"http://127.0.0.1:{payments_port}", Type="SecureString", Overwrite=True)
# The reconciler's API credential (for the Stripe stand-in), under the prefix's reconcile/ path:
# only its role reads it (the receiver's and the processor's are denied it).
credential_ref = f"ssm:/{prefix}/reconcile/{stack}/stripe-api"
ssm.put_parameter(Name=credential_ref[4:], Value="sk_test_stub", Type="SecureString", Overwrite=True)
arns = {}
for name, value in ((globex_ref[15:], globex_secret), (github_name, github_secret)):
    try:
        arns[name] = sm.create_secret(Name=name, SecretString=value)["ARN"]
    except sm.exceptions.ResourceExistsException:
        arns[name] = sm.put_secret_value(SecretId=name, SecretString=value)["ARN"]
github_ref = "secretsmanager:" + arns[github_name].rsplit("-", 1)[0]  # its ARN without the random suffix
# The bus stand-ins, created before the deploy: the rule goes on the inbound bus.
eb, sqsc = boto3.client("events"), boto3.client("sqs")
inbound_bus, forward_bus = f"{stack}-stripe", f"{stack}-out"
for bus in (inbound_bus, forward_bus):
    try:
        eb.create_event_bus(Name=bus)
    except eb.exceptions.ResourceAlreadyExistsException:
        pass
forwarded_url = sqsc.create_queue(QueueName=f"{stack}-forwarded")["QueueUrl"]
forwarded_arn = sqsc.get_queue_attributes(QueueUrl=forwarded_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
eb.put_rule(Name=f"{stack}-consumer", EventBusName=forward_bus, EventPattern=json.dumps({"source": [{"prefix": "hookledger."}]}))
eb.put_targets(Rule=f"{stack}-consumer", EventBusName=forward_bus, Targets=[{"Id": "consumer", "Arn": forwarded_arn}])
# The thin events' fetch key: a secret under the prefix, beside the signing secrets (docs/eventbridge.md).
stripe_key_ref = f"ssm:/{prefix}/stripe/{stack}-platform/api-key"
ssm.put_parameter(Name=stripe_key_ref[4:], Value="sk_test_stub", Type="SecureString", Overwrite=True)
sources = {"stripe": {"provider": "stripe", "bus_sources": ["e2e.stripe"],
                      "tenants": {"acme": {"secrets": [acme_ref]}, "globex": {"secrets": [globex_ref]},
                                  "platform": {"accounts": ["*"]}}},
           "orders": {"provider": "eventbridge", "bus_sources": ["e2e.orders"], "key_path": "order_id", "tenants": {"shop": {"accounts": ["*"]}}},
           "github": {"provider": "github", "retention": "240h", "tenants": {"acme": {"secrets": [github_ref]}}},
           "square": {"provider": "square", "tenants": {"acme": {"secrets": [square_ref]}}}}
params = {
    "Stage": "e2e",
    "Architecture": "x86_64",
    "SourcesConfig": json.dumps(sources, separators=(",", ":")),
    "PipelineSettings": json.dumps({"HOOKLEDGER_RECLAIM_AFTER": "5s", "LOG_LEVEL": "debug",
                                    # with the payload store, the 2 MB body of the pipeline test is accepted
                                    "HOOKLEDGER_MAX_BODY": "6291456"}, separators=(",", ":")),
    "RetentionDays": "2",
    "FrontDoor": "Both",
    # The functions call the emulator even when it was started by someone else without
    # AWS_ENDPOINT_URL in its environment: never real AWS.
    "EndpointUrl": endpoint,
    # The lab's sample effect (the processor deployed here) calls the payments stub for both APIs.
    "EffectSettings": json.dumps({"PAYMENTS_URL": payments_ref, "NOTIFY_URL": f"http://127.0.0.1:{payments_port}",
                                  "STRIPE_API_KEY": stripe_key_ref, "STRIPE_API_URL": f"http://127.0.0.1:{providers_port}"}),
    "InboundEventBus": inbound_bus,
    "ForwardEventBus": forward_bus,
    "SecretsPrefix": prefix,
    # The S3 payload store, whose bodies must outlive the longest source retention (github's
    # 240h); the receiver refuses a shorter store at cold start.
    "LargeBodyStoreDays": 10,
    "ReconcileConfig": json.dumps([{"source": "stripe", "tenant": "acme", "credential": credential_ref,
                                    "api_url": f"http://127.0.0.1:{providers_port}", "min_age": "0s"}], separators=(",", ":")),
}
params.update(extra)
with open(path, "w") as f:
    json.dump(params, f)  # JSON is YAML; sam reads .yaml parameter files
for k, v in {"secret_globex": globex_secret, "secret_github": github_secret, "secret_square": square_secret, "ssm_ref": acme_ref,
             "sm_ref": globex_ref, "sm_arn_ref": github_ref, "payments_ref": payments_ref,
             "reconcile_credential_ref": credential_ref, "inbound_bus": inbound_bus, "forward_bus": forward_bus,
             "forwarded_url": forwarded_url, "stripe_key_ref": stripe_key_ref}.items():
    print(f"{k}={shlex.quote(v)}")
EOF
)"
log "sam deploy $stack"
deployed=1
stack_deploy "$root" "$stack" "$build_dir" "$build_dir/params.yaml"
# The emulator fix-up, and IAM enforcement shown for whatever runs next (the e2e test probes
# every role in depth; the demo does not).
stack_fixup "$root" "$stack"

# Outputs.
eval "$("$py" - "$stack" <<'EOF'
import shlex, sys, boto3
stack = sys.argv[1]
out = {o["OutputKey"]: o["OutputValue"]
       for o in boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]["Outputs"]}
res = {r["LogicalResourceId"]: r["PhysicalResourceId"]
       for r in boto3.client("cloudformation").describe_stack_resources(StackName=stack)["StackResources"]}
iam = boto3.client("iam")
for k, v in {"api": out.get("ApiEndpoint", ""), "table": out["LedgerTableName"], "dlq": out["DeadLetterQueueUrl"],
             "payload_bucket": out.get("PayloadBucketName", ""),
             "queue": out["QueueUrl"], "processor": out["ProcessorFunctionName"],
             "webhook_url": out["WebhookUrl"],
             # The function URL's public form (https://<id>.lambda-url.<region>.on.aws/...), when
             # deployed; the test reaches it on the emulator by its host name.
             "function_url": out.get("FunctionUrlWebhookUrl", ""),
             "receiver": out["ReceiverFunctionName"],
             "roles": ",".join(f"{fn}={iam.get_role(RoleName=res[fn.capitalize() + 'Role'])['Role']['Arn']}"
                               for fn in ("receiver", "processor", "reclaimer", "reconciler", "bus") if fn.capitalize() + "Role" in res),
             "log_groups": ",".join(f"{fn}={res[fn.capitalize() + 'LogGroup']}" for fn in ("receiver", "processor", "reclaimer", "reconciler", "bus")
                                    if fn.capitalize() + "LogGroup" in res),
             "bus_dlq": out.get("BusDeadLetterQueueUrl", ""), "bus_intake": out.get("BusIntakeQueueUrl", ""),
             }.items():
    print(f"{k}={shlex.quote(v)}")
EOF
)"
log "deployed: webhooks at $webhook_url${function_url:+ and $function_url}, ledger $table"

# ---------------------------------------------------------------- drive and assert
export HOOKLEDGER_E2E_API="$api" HOOKLEDGER_E2E_TABLE="$table" HOOKLEDGER_E2E_DLQ_URL="$dlq" \
  HOOKLEDGER_E2E_QUEUE_URL="$queue" HOOKLEDGER_E2E_SECRET="$secret" HOOKLEDGER_E2E_SHARDS=16 \
  HOOKLEDGER_E2E_WEBHOOK_URL="$webhook_url" HOOKLEDGER_E2E_PROCESSOR="$processor" AWS_ENDPOINT_URL="$endpoint" \
  HOOKLEDGER_E2E_PAYMENTS_URL="http://127.0.0.1:$payments_port" HOOKLEDGER_E2E_ENDPOINT="$endpoint" \
  HOOKLEDGER_E2E_SECRET_GLOBEX="$secret_globex" HOOKLEDGER_E2E_SECRET_GITHUB="$secret_github" \
  HOOKLEDGER_E2E_SECRET_SQUARE="$secret_square" HOOKLEDGER_E2E_FUNCTION_URL="$function_url" HOOKLEDGER_E2E_RECEIVER="$receiver" \
  HOOKLEDGER_E2E_SSM_REF="$ssm_ref" HOOKLEDGER_E2E_SM_REF="$sm_ref" HOOKLEDGER_E2E_SM_ARN_REF="$sm_arn_ref" HOOKLEDGER_E2E_PAYMENTS_REF="$payments_ref" \
  HOOKLEDGER_E2E_ROLES="$roles" HOOKLEDGER_E2E_LOG_GROUPS="$log_groups" HOOKLEDGER_E2E_STACK="$stack" \
  HOOKLEDGER_E2E_PAYLOAD_BUCKET="$payload_bucket" \
  HOOKLEDGER_E2E_RECONCILER="$stack-reconciler" HOOKLEDGER_E2E_PROVIDERS_ADDR="127.0.0.1:$providers_port" \
  HOOKLEDGER_E2E_RECONCILE_CREDENTIAL_REF="$reconcile_credential_ref" \
  HOOKLEDGER_E2E_INBOUND_BUS="$inbound_bus" HOOKLEDGER_E2E_FORWARD_BUS="$forward_bus" HOOKLEDGER_E2E_FORWARDED_URL="$forwarded_url" \
  HOOKLEDGER_E2E_BUS_DLQ_URL="$bus_dlq" HOOKLEDGER_E2E_BUS_INTAKE_URL="$bus_intake" HOOKLEDGER_E2E_STRIPE_KEY_REF="$stripe_key_ref"
if [[ -n "${HOOKLEDGER_E2E_RUN:-}" ]]; then
  log "running: $HOOKLEDGER_E2E_RUN"
  bash -c "$HOOKLEDGER_E2E_RUN"
else
  log "go test ./lab/e2e"
  go test -tags e2e -count=1 -v -timeout 10m ./lab/e2e/
fi
log "passed"
