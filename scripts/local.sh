#!/usr/bin/env bash
# Deploys a hookledger project into MiniStack, a local AWS emulator, with IAM enforced: what
# `hookledger local` (make local) runs. The project is the current folder: hookledger's own
# repository, or a project made with sam init (its template.yaml and samconfig.toml).
#
#   local.sh up     the pinned tools into the project's .venv, MiniStack on 127.0.0.1:PORT with
#                   AUTH=true (left running), sam build (x86_64), the signing secrets that the
#                   [local] section of samconfig.toml references in SourcesConfig (created in the
#                   emulator with random values when missing), sam deploy with that section's
#                   parameters; writes .aws-sam/local/stack.json and senders.json
#   local.sh down   deletes the stack, and stops the MiniStack that `up` started
#
# HOOKLEDGER_LOCAL_PORT (4588) picks the port. Nothing here can reach AWS: every client gets
# AWS_ENDPOINT_URL and dummy credentials. Linux x86_64 only: MiniStack runs the functions'
# bootstraps as processes of this host. lab/scripts/e2e.sh sources this file for the stack_*
# functions and deploys its stack the same way.
set -euo pipefail

stack_engine="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" # read-only in the module cache

stack_log() { echo "local: $*" >&2; }

# stack_env ENDPOINT: every AWS client from here on talks to the emulator, as its root user.
stack_env() {
  unset AWS_PROFILE AWS_SESSION_TOKEN AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE
  export AWS_ENDPOINT_URL="$1" AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
  export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 SAM_CLI_TELEMETRY=0
}

stack_healthy() { curl -fsS -m 2 "$AWS_ENDPOINT_URL/_ministack/health" >/dev/null 2>&1; }
# A stack is only proven under enforced IAM: without it a missing permission passes.
stack_enforcing() { curl -fsS -m 2 "$AWS_ENDPOINT_URL/_ministack/health" 2>/dev/null | grep -q '"auth": *"enabled"'; }

# stack_build PROJECT BUILD_DIR [TAGS]: sam build of PROJECT/template.yaml for x86_64 (MiniStack
# runs provided.al2023 bootstraps as host processes), small binaries, extra Go build TAGS.
stack_build() {
  local project="$1" build_dir="$2" tags="${3:-}"
  mkdir -p "$build_dir"
  (cd "$project" && CGO_ENABLED=0 GOFLAGS="-tags=lambda.norpc${tags:+,$tags} '-ldflags=-s -w'" \
    "$project/.venv/sam/bin/sam" build --template-file "$project/template.yaml" --build-dir "$build_dir" \
    --parameter-overrides Architecture=x86_64) >"$build_dir/build.log" 2>&1 \
    || { cat "$build_dir/build.log" >&2; return 1; }
}

# stack_emulator PROJECT PORT LOG: MiniStack with IAM enforced on 127.0.0.1:PORT, unless one
# already answers there (used only if it enforces IAM too). Sets stack_emulator_pid to the
# process it started, "" when it reused one.
stack_emulator() {
  local project="$1" port="$2" log="$3"
  stack_emulator_pid=""
  if stack_healthy; then
    if ! stack_enforcing; then
      stack_log "the emulator on $AWS_ENDPOINT_URL does not enforce IAM (started without AUTH=true);" \
        "stop it or pick another port: a stack is deployed here only under enforced IAM"
      return 1
    fi
    stack_log "reusing the emulator already answering on $AWS_ENDPOINT_URL (IAM enforced)"
    return 0
  fi
  mkdir -p "$(dirname "$log")"
  stack_log "starting MiniStack on 127.0.0.1:$port (log: $log)"
  # AWS_ENDPOINT_URL in MiniStack's own environment is what its Lambda processes call back to.
  # AUTH=true: every request is checked against IAM; the deployed functions run with their
  # roles' credentials. test/test is the emulator's root, used to deploy and observe.
  AUTH=true GATEWAY_PORT="$port" BIND_HOST=127.0.0.1 MINISTACK_HOST=localhost PERSIST_STATE=0 \
    IOT_MTLS_ENABLED=0 SFTP_ENABLED=0 LOG_LEVEL=INFO STATE_DIR="$project/.ministack/state-$port" \
    nohup "$project/.venv/bin/ministack" >"$log" 2>&1 &
  stack_emulator_pid=$!
  for _ in $(seq 1 150); do
    stack_healthy && break
    if ! kill -0 "$stack_emulator_pid" 2>/dev/null; then
      tail -20 "$log" >&2
      stack_emulator_pid=""
      return 1
    fi
    sleep 0.2
  done
  stack_healthy || { stack_log "MiniStack did not answer on $AWS_ENDPOINT_URL"; return 1; }
  stack_enforcing || { stack_log "MiniStack on $AWS_ENDPOINT_URL answers but does not report IAM enforcement"; return 1; }
}

# stack_stop PID: stops the MiniStack process PID.
stack_stop() {
  local pid="$1"
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -9 "$pid" 2>/dev/null || true
}

# stack_deploy PROJECT STACK BUILD_DIR PARAMS: sam deploy of the built template with the
# parameters in the JSON file PARAMS (JSON is YAML; a file keeps the quotes of JSON values, which
# the Key=Value form would strip). The project's samconfig.toml, with its AWS settings, stays out.
stack_deploy() {
  local project="$1" stack="$2" build_dir="$3" params="$4"
  printf 'version = 0.1\n' >"$build_dir/samconfig.toml"
  "$project/.venv/sam/bin/sam" deploy --config-file "$build_dir/samconfig.toml" \
    --template-file "$build_dir/template.yaml" --stack-name "$stack" --region us-east-1 \
    --resolve-s3 --capabilities CAPABILITY_IAM --no-confirm-changeset --no-fail-on-empty-changeset \
    --no-progressbar --parameter-overrides "file://$params" >"$build_dir/deploy.log" 2>&1 \
    || { tail -40 "$build_dir/deploy.log" >&2; return 1; }
}

# stack_fixup PROJECT STACK: the one emulator fix-up (docs/deploy.md, "Emulator findings"), then
# the proof that IAM is enforced: the receiver's role is denied a call it is not granted.
stack_fixup() {
  "$1/.venv/bin/python" - "$2" <<'EOF'
import sys, boto3
from botocore.exceptions import ClientError
stack = sys.argv[1]
cfn = boto3.client("cloudformation")
out = {o["OutputKey"]: o["OutputValue"] for o in cfn.describe_stacks(StackName=stack)["Stacks"][0]["Outputs"]}
# MiniStack keeps an event source mapping's ScalingConfig as CloudFormation handed it: a Ref to a
# Number parameter arrives as the string "10", and its SQS poller then fails comparing it with
# an int. AWS coerces it. Re-set it through the Lambda API with the integer (botocore already
# reads it back as an int, so the stored string cannot be told apart from here: always re-set).
lam = boto3.client("lambda")
for m in lam.list_event_source_mappings(FunctionName=out["ProcessorFunctionName"])["EventSourceMappings"]:
    mc = (m.get("ScalingConfig") or {}).get("MaximumConcurrency")
    if mc is not None:
        lam.update_event_source_mapping(UUID=m["UUID"], ScalingConfig={"MaximumConcurrency": int(mc)})
        print(f"local: emulator fix-up: event source ScalingConfig.MaximumConcurrency re-set to {int(mc)}", file=sys.stderr)
res = {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in cfn.describe_stack_resources(StackName=stack)["StackResources"]}
role = boto3.client("iam").get_role(RoleName=res["ReceiverRole"])["Role"]["Arn"]
c = boto3.client("sts").assume_role(RoleArn=role, RoleSessionName="local-enforcement")["Credentials"]
ddb = boto3.client("dynamodb", aws_access_key_id=c["AccessKeyId"], aws_secret_access_key=c["SecretAccessKey"],
                   aws_session_token=c["SessionToken"])
try:
    ddb.scan(TableName=out["LedgerTableName"], Limit=1)
except ClientError as e:
    if e.response["Error"]["Code"] in ("AccessDeniedException", "AccessDenied"):
        print("local: IAM enforced: the receiver's role was denied dynamodb:Scan", file=sys.stderr)
        sys.exit(0)
    raise
sys.exit("local: the receiver's role was allowed dynamodb:Scan: IAM is not enforced, or the role grants too much")
EOF
}

# stack_delete PROJECT STACK BUILD_DIR: deletes the stack, then the ledger table and the payload
# bucket, which are DeletionPolicy: Retain and outlive their stack by design.
stack_delete() {
  local project="$1" stack="$2" build_dir="$3" rc=0 retained
  retained="$("$project/.venv/bin/python" - "$stack" <<'EOF'
import sys, boto3
from botocore.exceptions import ClientError
try:
    res = boto3.client("cloudformation").describe_stack_resources(StackName=sys.argv[1])["StackResources"]
except ClientError:
    res = []
print(" ".join(f"{r['LogicalResourceId']}={r['PhysicalResourceId']}" for r in res
               if r["LogicalResourceId"] in ("LedgerTable", "PayloadBucket") and r.get("PhysicalResourceId")))
EOF
)" || rc=1
  stack_log "deleting stack $stack"
  mkdir -p "$build_dir"
  "$project/.venv/sam/bin/sam" delete --stack-name "$stack" --no-prompts --region us-east-1 >"$build_dir/delete.log" 2>&1 \
    || { cat "$build_dir/delete.log" >&2; rc=1; }
  # shellcheck disable=SC2086 # one word per retained resource
  "$project/.venv/bin/python" - "$stack" $retained <<'EOF' || rc=1
import sys, boto3
from botocore.exceptions import ClientError
for kv in sys.argv[2:]:
    kind, name = kv.split("=", 1)
    try:
        if kind == "LedgerTable":
            boto3.client("dynamodb").delete_table(TableName=name)
        else:
            s3 = boto3.client("s3")
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
                for o in page.get("Contents", []):
                    s3.delete_object(Bucket=name, Key=o["Key"])
            s3.delete_bucket(Bucket=name)
    except ClientError as e:
        if e.response["Error"]["Code"] not in ("ResourceNotFoundException", "NoSuchBucket"):
            raise
cfn = boto3.client("cloudformation")
try:
    status = cfn.describe_stacks(StackName=sys.argv[1])["Stacks"][0]["StackStatus"]
except ClientError:
    status = "gone"
print(f"local: stack after delete: {status}", file=sys.stderr)
sys.exit(0 if status in ("gone", "DELETE_COMPLETE") else 1)
EOF
  return "$rc"
}

# ---------------------------------------------------------------- hookledger local
local_up() {
  local project="$1" port="$2" build_dir="$3"
  if [[ "$(uname -s)/$(uname -m)" != Linux/x86_64 ]]; then
    stack_log "MiniStack runs the functions' linux/amd64 bootstraps as processes of this host, which is $(uname -s)/$(uname -m):" \
      "run make local on Linux x86_64 (a VM or CI runner), or test in memory with go test ./effect/"
    return 1
  fi
  HOOKLEDGER_TOOLS_ROOT="$project" bash "$stack_engine/scripts/tools.sh" deploy
  if [[ ! -f "$project/template.yaml" ]]; then
    stack_log "no template.yaml in $project: run hookledger template (make template) first"
    return 1
  fi
  stack_log "sam build (x86_64) into ${build_dir#"$project"/}"
  stack_build "$project" "$build_dir"
  stack_emulator "$project" "$port" "$project/.ministack/local-$port.log"
  if [[ -n "$stack_emulator_pid" ]]; then
    echo "$stack_emulator_pid" >"$project/.ministack/local-$port.pid"
  fi
  local stack
  stack="$("$project/.venv/bin/python" - "$project/samconfig.toml" "$AWS_ENDPOINT_URL" "$build_dir" <<'EOF'
import json, os, secrets, shlex, sys, tomllib, boto3
samconfig, endpoint, build_dir = sys.argv[1:4]
where = "samconfig.toml [local.deploy.parameters] parameter_overrides"
def fail(msg):
    sys.exit(f"local: {msg}")
try:
    with open(samconfig, "rb") as f:
        env = tomllib.load(f).get("local")
except FileNotFoundError:
    fail(f"no samconfig.toml in {os.path.dirname(samconfig)}")
if env is None:
    fail("samconfig.toml has no [local] section: add [local.deploy.parameters] with parameter_overrides "
         "(Stage, SecretsPrefix, SourcesConfig, EffectSettings), as a project made with sam init has")
overrides = env.get("deploy", {}).get("parameters", {}).get("parameter_overrides", [])
params = {}
for item in [overrides] if isinstance(overrides, str) else overrides:
    for tok in shlex.split(item):
        k, sep, v = tok.partition("=")
        if not sep:
            fail(f"{where}: {tok!r} is not Key=Value")
        params[k] = v
stack = env.get("global", {}).get("parameters", {}).get("stack_name", "hookledger-local")
prefix = params.get("SecretsPrefix", "")
try:
    sources = json.loads(params.get("SourcesConfig", ""))
except ValueError:
    sources = None
if not isinstance(sources, dict):
    fail(f"{where}: SourcesConfig must be the senders JSON itself, an object of sources (its secrets referenced as ssm:/{prefix or 'PREFIX'}/...)")
# Every signing secret the sources reference: created in the emulator (random) when missing.
ssm, sm = boto3.client("ssm"), boto3.client("secretsmanager")
senders = []
for src, sc in sources.items():
    for tenant, tc in (sc.get("tenants") or {}).items():
        values = []
        for ref in tc.get("secrets") or []:
            scheme, _, name = ref.partition(":")
            inside = prefix and (name.startswith(f"/{prefix}/") if scheme == "ssm" else name.startswith(f"{prefix}/"))
            if scheme not in ("ssm", "secretsmanager") or not inside:
                fail(f"{where}: the secret {ref!r} of {src}/{tenant} must be an ssm:/{prefix}/... or "
                     f"secretsmanager:{prefix}/... reference under SecretsPrefix, as on AWS; local creates it")
            value = "whsec_local_" + secrets.token_hex(16)
            try:
                if scheme == "ssm":
                    try:
                        value = ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"]
                    except ssm.exceptions.ParameterNotFound:
                        ssm.put_parameter(Name=name, Value=value, Type="SecureString")
                else:
                    try:
                        value = sm.get_secret_value(SecretId=name)["SecretString"]
                    except sm.exceptions.ResourceNotFoundException:
                        sm.create_secret(Name=name, SecretString=value)
            except Exception as e:
                fail(f"the secret {ref!r} of {src}/{tenant}: {e}")
            values.append(value)
        if values:
            senders.append({"source": src, "tenant": tenant, "provider": sc.get("provider", src), "secret": values[0]})
params.update({"Architecture": "x86_64", "EndpointUrl": endpoint})
with open(os.path.join(build_dir, "params.yaml"), "w") as f:
    json.dump(params, f)
fd = os.open(os.path.join(build_dir, "senders.json"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
with os.fdopen(fd, "w") as f:
    json.dump(senders, f)
print(stack)
EOF
)"
  stack_log "sam deploy $stack"
  stack_deploy "$project" "$stack" "$build_dir" "$build_dir/params.yaml"
  stack_fixup "$project" "$stack"
  "$project/.venv/bin/python" - "$stack" "$AWS_ENDPOINT_URL" "$build_dir/stack.json" <<'EOF'
import json, sys, boto3
stack, endpoint, path = sys.argv[1:4]
out = {o["OutputKey"]: o["OutputValue"]
       for o in boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]["Outputs"]}
with open(path, "w") as f:
    json.dump({"stack": stack, "endpoint": endpoint, "outputs": out}, f, indent=2)
EOF
  stack_log "deployed $stack: webhooks at its WebhookUrl (${build_dir#"$project"/}/stack.json)"
}

local_down() {
  local project="$1" port="$2" build_dir="$3" stack rc=0
  if stack_healthy && [[ -f "$build_dir/stack.json" ]]; then
    stack="$("$project/.venv/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["stack"])' "$build_dir/stack.json")"
    stack_delete "$project" "$stack" "$build_dir" || rc=1
  fi
  rm -f "$build_dir/stack.json" "$build_dir/senders.json"
  local pidfile="$project/.ministack/local-$port.pid"
  if [[ -f "$pidfile" ]]; then
    stack_log "stopping MiniStack (pid $(cat "$pidfile"))"
    stack_stop "$(cat "$pidfile")"
    rm -f "$pidfile"
  fi
  return "$rc"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  project="$(pwd)"
  port="${HOOKLEDGER_LOCAL_PORT:-4588}"
  stack_env "http://localhost:$port"
  case "${1:-}" in
  up) local_up "$project" "$port" "$project/.aws-sam/local" ;;
  down) local_down "$project" "$port" "$project/.aws-sam/local" ;;
  *)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
    exit 2
    ;;
  esac
fi
