// Package webhook verifies incoming webhook deliveries and extracts, for each
// one, a stable idempotency key and the event type.
//
// A [Verifier] is built once per source (one sender) from a [Config] and is
// safe for concurrent use. [Verifier.Verify] checks the signature against any
// of the given secrets, so a secret can rotate by passing the old and the new
// one for a while. It checks the signed timestamp, where the scheme has one,
// against the tolerance, both ways. Then it extracts the [Event]:
//
//   - stripe: Stripe-Signature (t=...,v1=...); key = body "id", type = body "type".
//   - github: X-Hub-Signature-256 (sha256=<hex>); key = X-GitHub-Delivery,
//     type = X-GitHub-Event. No timestamp.
//   - standard-webhooks, svix: webhook-id/-timestamp/-signature or the svix-
//     family (both accepted for both names); the whsec_ secret is base64;
//     key = the id header, type = body "type" when the body has one.
//   - generic: a configurable HMAC ([GenericConfig]); key from its id header,
//     otherwise derived.
//   - slack: X-Slack-Signature (v0=, over "v0:ts:body", 5m); key = body
//     event_id, derived for interactivity payloads and slash commands;
//     url_verification is a handshake.
//   - square: x-square-hmacsha256-signature (base64, over URL + body); key =
//     body event_id.
//   - paddle: Paddle-Signature (ts=...;h1=..., over "ts:body", 5s); key = body
//     event_id.
//   - twilio: X-Twilio-Signature (base64 HMAC-SHA1 over URL + sorted form
//     fields, or URL with bodySHA256 for JSON); key =
//     I-Twilio-Idempotency-Token, else derived.
//   - linear: Linear-Signature (hex of body); body webhookTimestamp in
//     milliseconds (1m); key = Linear-Delivery.
//   - zoom: x-zm-signature (v0=, over "v0:ts:body", 5m); key derived (volatile
//     event_ts, download_token); endpoint.url_validation is a handshake.
//   - twitch: Twitch-Eventsub-Message-Signature (sha256=, over id + timestamp +
//     body, 10m); key = Twitch-Eventsub-Message-Id;
//     webhook_callback_verification is a handshake.
//   - intercom: X-Hub-Signature (sha1=); key = body id; ping is a handshake.
//   - gitlab: X-Gitlab-Token compared with the secret; key = Idempotency-Key,
//     else derived (X-Gitlab-Event-UUID is shared by recursive webhooks).
//   - shopify: X-Shopify-Hmac-Sha256 (base64); key = X-Shopify-Event-Id, else
//     X-Shopify-Webhook-Id; the newer names without X- are read too.
//
// docs/providers.md lists every provider's sources, defaults and handshake.
// [RetryHorizon] says how long a provider may deliver an event again under
// the same id, which a source's records must outlive.
//
// Config.KeyHeader and Config.KeyPath override where the key comes from;
// Config.TypePath, where the type does. When a scheme yields no key, one is
// derived from the body (docs/design.md §2). The body is parsed as JSON (a
// form becomes an object of its fields) and its volatile fields are removed
// (Config.VolatileFields, or the provider's list). The key is "derived:" and
// the hex SHA-256 of the event type, a NUL byte and the canonical JSON of
// the rest. Other bodies yield [ErrNoKey]: a key is never random, and never a
// hash over bytes that may carry delivery timestamps.
//
// Each signature, timestamp, id and type header is read once, in the one
// spelling the provider's SDK accepts: hex in lowercase, base64 canonical. A
// header that comes twice (two lines, API Gateway's comma-joined value, or
// two spellings that disagree) is refused with a [*RepeatedHeaderError]. A
// key or type read from a JSON body must be a string (a configured key_path
// also takes an integer). The members on the way to it may not come twice;
// for a derived key, no member anywhere may.
//
// Every Verify failure wraps one of the sentinel errors. A failure after the
// signature checked out always wraps [ErrNoKey], sometimes with
// [ErrMalformedBody] or [ErrRepeatedHeader]. Callers map them to answers
// with errors.Is and never show the error text to the sender. Signatures are
// compared in constant time. No input makes the package panic.
//
// [Verifier.Sign] produces every header a real sender would send, for tests
// and local runs, so signatures are never crafted by hand.
package webhook
