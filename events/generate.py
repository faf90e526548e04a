#!/usr/bin/env python3
"""Writes the sample events in this folder for `sam local invoke -e events/<file>`.

The receiver samples carry a Stripe-style signature (t=<unix>,v1=<hex HMAC-SHA256 of
"<t>.<body>">) made with the sample secret below, which events/env.json configures for the
receiver together with a very long timestamp tolerance, so that the fixed timestamp in these
files keeps verifying. Neither the secret nor the tolerance belongs in a real deployment.

Run: python3 events/generate.py
"""
import base64
import hashlib
import hmac
import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
SECRET = "whsec_hookledger_sample_only"
TIMESTAMP = 1767225600  # 2026-01-01T00:00:00Z
API_ID = "a1b2c3d4e5"
ACCOUNT = "123456789012"


def stripe_body(event_id, event_type="invoice.paid"):
    event = {
        "id": event_id,
        "object": "event",
        "api_version": "2024-06-20",
        "created": TIMESTAMP,
        "type": event_type,
        "livemode": False,
        "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None},
        "data": {"object": {"id": "in_1HookledgerSample0001", "object": "invoice",
                            "amount_paid": 2000, "currency": "eur", "status": "paid"}},
    }
    return json.dumps(event, separators=(",", ":"))


def stripe_signature(body, secret=SECRET, ts=TIMESTAMP):
    mac = hmac.new(secret.encode(), f"{ts}.{body}".encode(), hashlib.sha256).hexdigest()
    return f"t={ts},v1={mac}"


def http_api_event(source, tenant, body, signature, base64_body=False, request_id="Aa1Bb2Cc3Dd4="):
    path = f"/webhooks/{source}/{tenant}"
    return {
        "version": "2.0",
        "routeKey": "POST /webhooks/{source}/{tenant}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {
            "accept": "*/*; q=0.5, application/xml",
            "content-type": "application/json; charset=utf-8",
            "content-length": str(len(body)),
            "host": f"{API_ID}.execute-api.us-east-1.amazonaws.com",
            "stripe-signature": signature,
            "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
            "x-forwarded-for": "203.0.113.10",
            "x-forwarded-port": "443",
            "x-forwarded-proto": "https",
        },
        "requestContext": {
            "accountId": ACCOUNT,
            "apiId": API_ID,
            "domainName": f"{API_ID}.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": API_ID,
            "http": {"method": "POST", "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "203.0.113.10", "userAgent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)"},
            "requestId": request_id,
            "routeKey": "POST /webhooks/{source}/{tenant}",
            "stage": "$default",
            "time": "01/Jan/2026:00:00:01 +0000",
            "timeEpoch": TIMESTAMP * 1000 + 1000,
        },
        "pathParameters": {"source": source, "tenant": tenant},
        "body": base64.b64encode(body.encode()).decode() if base64_body else body,
        "isBase64Encoded": base64_body,
    }


def sqs_message(n, source, tenant, key, event_type, body):
    message = {"v": 1, "source": source, "tenant": tenant, "key": key, "type": event_type,
               "sha256": hashlib.sha256(body.encode()).hexdigest(),
               # []byte fields travel base64-encoded in Go's encoding/json
               "body": base64.b64encode(body.encode()).decode(),
               "received_at": TIMESTAMP * 1000 + 1000}
    return {
        "messageId": f"0c2b6f5e-0000-4000-8000-00000000000{n}",
        "receiptHandle": f"AQEBsample{n}==",
        "body": json.dumps(message, separators=(",", ":")),
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": str(TIMESTAMP * 1000 + 1000),
                       "SenderId": "AROAEXAMPLE:hookledger-dev-receiver",
                       "ApproximateFirstReceiveTimestamp": str(TIMESTAMP * 1000 + 1100)},
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(json.dumps(message, separators=(",", ":")).encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": f"arn:aws:sqs:us-east-1:{ACCOUNT}:hookledger-dev-Queue-SAMPLE",
        "awsRegion": "us-east-1",
    }


def write(name, obj):
    (HERE / name).write_text(json.dumps(obj, indent=2) + "\n")


def main():
    body = stripe_body("evt_1HookledgerSample0001")
    sig = stripe_signature(body)
    write("receiver-stripe.json", http_api_event("stripe", "acme", body, sig))
    write("receiver-stripe-base64.json", http_api_event("stripe", "acme", body, sig, base64_body=True,
                                                        request_id="Ee5Ff6Gg7Hh8="))
    write("receiver-stripe-bad-signature.json",
          http_api_event("stripe", "acme", body, stripe_signature(body, secret="whsec_wrong")))
    write("receiver-unknown-tenant.json", http_api_event("stripe", "nobody", body, sig))

    second = stripe_body("evt_1HookledgerSample0002", "charge.requested")
    write("processor-sqs-batch.json", {"Records": [
        sqs_message(1, "stripe", "acme", "evt_1HookledgerSample0001", "invoice.paid", body),
        sqs_message(2, "stripe", "acme", "evt_1HookledgerSample0002", "charge.requested", second),
    ]})
    write("reclaimer-schedule.json", {
        "version": "0",
        "id": "5e1f9c3a-0000-4000-8000-000000000001",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": "2026-01-01T00:01:00Z",
        "region": "us-east-1",
        "resources": [f"arn:aws:events:us-east-1:{ACCOUNT}:rule/hookledger-dev-ReclaimerFunctionSchedule-SAMPLE"],
        "detail": {},
    })
    sources = {"stripe": {"provider": "stripe", "tolerance": "876000h",
                          "tenants": {"acme": {"secrets": ["literal:" + SECRET]}}}}
    local = {"HOOKLEDGER_TABLE": "hookledger", "HOOKLEDGER_QUEUE_URL": "http://localhost:4566/000000000000/hookledger"}
    write("env.json", {
        "ReceiverFunction": dict(local, HOOKLEDGER_SOURCES=json.dumps(sources, separators=(",", ":"))),
        "ProcessorFunction": dict(local),
        "ReclaimerFunction": dict(local),
    })


if __name__ == "__main__":
    main()
