"""Drives Powertools for AWS Lambda (Python)'s idempotency utility, with its
DynamoDB persistence layer, against the local emulator, for `hookledger bench`.

It reads the event stream the Go side generated (--stream: {"accounting": [...],
"timing": [...]}, each delivery {"id", "size", "dup", "body"}), runs every delivery
through an @idempotent_function keyed on the event id, and writes (--out) per
delivery the DynamoDB requests it made and, for each write, the item before and
after (read back through a second, unobserved client) so that the Go side prices
both contenders with one implementation of DynamoDB's billing rules. The timing
pass runs a second stream without the observer, measuring wall time per delivery.

Powertools dedupes a synchronous handler: it stores the handler's response, not
the payload, and has no queue, lease handover or reclaimer.

Only a loopback endpoint is accepted; it never reaches AWS.
"""

import argparse
import json
import os
import sys
import time
import uuid
from importlib.metadata import version
from urllib.parse import urlparse

import boto3
from botocore.config import Config


class FakeContext:
    """The slice of the Lambda context Powertools reads: the remaining time."""

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--endpoint", required=True, help="emulator URL, e.g. http://localhost:4599")
    ap.add_argument("--stream", required=True, help="JSON stream file from hookledger bench")
    ap.add_argument("--out", required=True, help="where to write the results JSON")
    args = ap.parse_args()

    host = urlparse(args.endpoint).hostname or ""
    if host not in ("localhost", "127.0.0.1", "::1") and not host.startswith("127."):
        print(f"powertools_bench: {args.endpoint} is not a loopback address", file=sys.stderr)
        return 2

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("AWS_LAMBDA_FUNCTION_NAME", "powertools-bench")

    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
        idempotent_function,
    )

    cfg = Config(retries={"max_attempts": 1, "mode": "standard"})

    def client():
        return boto3.client("dynamodb", endpoint_url=args.endpoint, region_name="us-east-1", config=cfg)

    raw = client()
    table = "bench-pt-" + uuid.uuid4().hex[:10]
    raw.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for _ in range(300):
        if raw.describe_table(TableName=table)["Table"]["TableStatus"] == "ACTIVE":
            break
        time.sleep(0.2)

    with open(args.stream) as f:
        stream = json.load(f)

    def run(deliveries, observe):
        observed = client()
        ops = []
        calls = {}

        def before(params, model, **_):
            name = model.name
            calls[name] = calls.get(name, 0) + 1
            if name in ("PutItem", "UpdateItem", "DeleteItem"):
                key = params.get("Key") or {"id": params["Item"]["id"]}
                ops.append({"op": name, "key": key, "attempted": params.get("Item"), "before": get(key)})

        def after(http_response, parsed, model, **_):
            name = model.name
            if name in ("PutItem", "UpdateItem", "DeleteItem") and ops and ops[-1]["op"] == name and "ok" not in ops[-1]:
                op = ops[-1]
                op["ok"] = http_response.status_code == 200
                op["after"] = get(op["key"]) if op["ok"] else None
            elif name == "GetItem":
                ops.append({"op": name, "ok": True, "after": parsed.get("Item"), "consistent": True})

        def get(key):
            return raw.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")

        if observe:
            observed.meta.events.register("before-parameter-build.dynamodb.*", before)
            observed.meta.events.register("after-call.dynamodb.*", after)

        persistence = DynamoDBPersistenceLayer(table_name=table, boto3_client=observed)
        config = IdempotencyConfig(event_key_jmespath="id", raise_on_no_idempotency_key=True)
        config.register_lambda_context(FakeContext())  # as in Lambda: sets in_progress_expiration

        @idempotent_function(data_keyword_argument="event", persistence_store=persistence, config=config)
        def handle(event):
            # The side effect would run here; the response is what Powertools stores.
            return {"status": "processed", "event_id": event["id"]}

        results, timing = [], []
        for d in deliveries:
            event = json.loads(d["body"])  # the Lambda runtime hands the handler a parsed event
            ops.clear()
            calls.clear()
            t0 = time.perf_counter()
            handle(event=event)
            ms = (time.perf_counter() - t0) * 1000
            if observe:
                results.append({
                    "size": d["size"], "dup": d["dup"], "calls": dict(calls),
                    "ops": [{k: v for k, v in o.items() if k != "key"} for o in ops],
                })
            else:
                timing.append({"size": d["size"], "dup": d["dup"], "ms": ms})
        return results, timing

    try:
        deliveries, _ = run(stream["accounting"], observe=True)
        _, timing = run(stream["timing"], observe=False)
    finally:
        raw.delete_table(TableName=table)

    with open(args.out, "w") as f:
        json.dump({"version": version("aws-lambda-powertools"), "deliveries": deliveries, "timing": timing}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
