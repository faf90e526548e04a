#!/usr/bin/env bash
# End-to-end run of the idempotency examples (idempotency/example/template.yaml) in MiniStack,
# offline, after the main deployed-stack test:
#   1. lint the template (cfn-lint, sam validate), sam build (x86_64: MiniStack runs
#      provided.al2023 bootstraps as host processes)
#   2. start MiniStack on 127.0.0.1:$HOOKLEDGER_E2E_PORT (4577) with IAM enforced (AUTH=true),
#      unless one that enforces already answers there
#   3. sam deploy the examples' stack (HTTP API + order function, SQS queue + shipping function,
#      the idempotency and orders tables)
#   4. each function's role is denied what package idempotency never needs (DeleteItem, Scan on
#      the idempotency table); go test -tags e2e ./idempotency/example: repeated POSTs replay the
#      stored order with Idempotent-Replayed: true; a redelivered or duplicated SQS message ships
#      nothing more (the functions run with their roles' credentials, so the granted PutItem,
#      UpdateItem and GetItem are enough)
#   5. delete the stack; stop the emulator if this script started it
# Nothing here can reach AWS: every client gets AWS_ENDPOINT_URL and dummy credentials.
#
# Environment: HOOKLEDGER_E2E_PORT (4577), HOOKLEDGER_E2E_KEEP=1 keeps stack and emulator.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 0
fi
port="${HOOKLEDGER_E2E_PORT:-4577}"
stack="${HOOKLEDGER_E2E_EXAMPLES_STACK:-idem-examples-e2e}"
keep="${HOOKLEDGER_E2E_KEEP:-0}"
endpoint="http://localhost:$port"
build_dir="$root/.aws-sam/$stack"
state_dir="$root/.ministack"
sam="$root/.venv/sam/bin/sam"
py="$root/.venv/bin/python"

log() { echo "e2e-examples: $*" >&2; }

bash "$root/scripts/tools.sh"

unset AWS_PROFILE AWS_SESSION_TOKEN AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE
export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 SAM_CLI_TELEMETRY=0

# ---------------------------------------------------------------- lint, build
bash "$root/scripts/lint.sh" "$root/idempotency/example/template.yaml" >&2
log "sam build (x86_64) into ${build_dir#"$root"/}"
mkdir -p "$build_dir"
CGO_ENABLED=0 GOFLAGS="-tags=lambda.norpc '-ldflags=-s -w'" \
  "$sam" build --template-file "$root/idempotency/example/template.yaml" --build-dir "$build_dir" \
  --parameter-overrides Architecture=x86_64 >"$build_dir/build.log" 2>&1 \
  || { cat "$build_dir/build.log" >&2; exit 1; }

# ---------------------------------------------------------------- emulator
started_pid=""
healthy() { curl -fsS -m 2 "$endpoint/_ministack/health" >/dev/null 2>&1; }
enforcing() { curl -fsS -m 2 "$endpoint/_ministack/health" 2>/dev/null | grep -q '"auth": *"enabled"'; }
cleanup() {
  local rc=$?
  set +e
  if [[ "$keep" == 1 ]]; then
    log "HOOKLEDGER_E2E_KEEP=1: leaving stack $stack${started_pid:+ and MiniStack (pid $started_pid)} on $endpoint"
    exit "$rc"
  fi
  if [[ -n "$started_pid" ]] && ! kill -0 "$started_pid" 2>/dev/null; then
    log "MiniStack (pid $started_pid) is gone: something else stopped it during the run"
    deployed="" started_pid="" rc=1
  fi
  if [[ -n "${deployed:-}" ]]; then
    log "deleting stack $stack"
    "$sam" delete --stack-name "$stack" --no-prompts --region us-east-1 >"$build_dir/delete.log" 2>&1 \
      || { cat "$build_dir/delete.log" >&2; rc=1; }
  fi
  if [[ -n "$started_pid" ]]; then
    log "stopping MiniStack (pid $started_pid)"
    kill "$started_pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$started_pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$started_pid" 2>/dev/null
  fi
  exit "$rc"
}
trap cleanup EXIT

if healthy; then
  if ! enforcing; then
    log "the emulator on $endpoint does not enforce IAM (started without AUTH=true); stop it or pick another HOOKLEDGER_E2E_PORT"
    exit 1
  fi
  log "reusing the emulator already answering on $endpoint (IAM enforced)"
else
  mkdir -p "$state_dir"
  log "starting MiniStack on 127.0.0.1:$port (log: ${state_dir#"$root"/}/e2e-examples-$port.log)"
  # AWS_ENDPOINT_URL in MiniStack's own environment is what its Lambda processes call back to.
  AUTH=true GATEWAY_PORT="$port" BIND_HOST=127.0.0.1 MINISTACK_HOST=localhost PERSIST_STATE=0 \
    IOT_MTLS_ENABLED=0 SFTP_ENABLED=0 LOG_LEVEL=INFO STATE_DIR="$state_dir/state-examples-$port" \
    "$root/.venv/bin/ministack" >"$state_dir/e2e-examples-$port.log" 2>&1 &
  started_pid=$!
  for _ in $(seq 1 150); do
    healthy && break
    kill -0 "$started_pid" 2>/dev/null || { tail -20 "$state_dir/e2e-examples-$port.log" >&2; started_pid=""; exit 1; }
    sleep 0.2
  done
  healthy || { log "MiniStack did not answer on $endpoint"; exit 1; }
  enforcing || { log "MiniStack on $endpoint answers but does not report IAM enforcement"; exit 1; }
fi

# ---------------------------------------------------------------- deploy
printf 'version = 0.1\n' >"$build_dir/samconfig.toml" # keep any samconfig.toml's AWS settings out
log "sam deploy $stack"
deployed=1
"$sam" deploy --config-file "$build_dir/samconfig.toml" \
  --template-file "$build_dir/template.yaml" --stack-name "$stack" --region us-east-1 \
  --resolve-s3 --capabilities CAPABILITY_IAM --no-confirm-changeset --no-fail-on-empty-changeset \
  --no-progressbar --parameter-overrides Architecture=x86_64 "EndpointUrl=$endpoint" >"$build_dir/deploy.log" 2>&1 \
  || { tail -40 "$build_dir/deploy.log" >&2; exit 1; }

eval "$("$py" - "$stack" <<'EOF'
import shlex, sys, boto3
out = {o["OutputKey"]: o["OutputValue"]
       for o in boto3.client("cloudformation").describe_stacks(StackName=sys.argv[1])["Stacks"][0]["Outputs"]}
for k, v in {"orders_url": out["OrdersUrl"], "idem_table": out["IdempotencyTableName"], "orders_table": out["OrdersTableName"],
             "queue": out["OrdersQueueUrl"], "ship": out["ShipFunctionName"], "api_fn": out["ApiFunctionName"]}.items():
    print(f"{k}={shlex.quote(v)}")
EOF
)"
log "deployed: orders at $orders_url"

# Least privilege, enforced: each function's role may not delete or scan idempotency records.
"$py" - "$idem_table" "$ship" "$api_fn" <<'EOF'
import sys, boto3
from botocore.exceptions import ClientError
table = sys.argv[1]
for fn in sys.argv[2:]:
    role = boto3.client("lambda").get_function_configuration(FunctionName=fn)["Role"]
    c = boto3.client("sts").assume_role(RoleArn=role, RoleSessionName="e2e-examples")["Credentials"]
    ddb = boto3.client("dynamodb", aws_access_key_id=c["AccessKeyId"], aws_secret_access_key=c["SecretAccessKey"],
                       aws_session_token=c["SessionToken"])
    for what, call in [("DeleteItem", lambda: ddb.delete_item(TableName=table, Key={"pk": {"S": "idem#x"}, "sk": {"S": "idem"}})),
                       ("Scan", lambda: ddb.scan(TableName=table, Limit=1))]:
        try:
            call()
        except ClientError as e:
            if e.response["Error"]["Code"] in ("AccessDeniedException", "AccessDenied"):
                continue
            raise
        sys.exit(f"e2e-examples: {fn}'s role was allowed dynamodb:{what} on the idempotency table: IAM not enforced, or the role grants too much")
    print(f"e2e-examples: IAM enforced: {fn}'s role is denied DeleteItem and Scan on the idempotency table", file=sys.stderr)
EOF

# ---------------------------------------------------------------- drive and assert
export IDEM_E2E_ORDERS_URL="$orders_url" IDEM_E2E_IDEMPOTENCY_TABLE="$idem_table" IDEM_E2E_ORDERS_TABLE="$orders_table" \
  IDEM_E2E_QUEUE_URL="$queue" IDEM_E2E_SHIP_FUNCTION="$ship"
log "go test ./idempotency/example"
go test -tags e2e -count=1 -v -timeout 5m ./idempotency/example/
log "passed"
