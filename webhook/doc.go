// Package webhook verifies incoming webhook deliveries and extracts, for each
// one, a stable idempotency key and the event type.
//
// A [Verifier] is built once per source (one sender) from a [Config] and is safe
// for concurrent use. [Verifier.Verify] checks the delivery's signature against
// any of the given secrets, so a secret can be rotated by passing the old and the
// new one for a while, checks the signed timestamp against the tolerance where
// the scheme has one (both too old and too far in the future are rejected), and
// then extracts the [Event]:
//
//   - stripe: Stripe-Signature (t=...,v1=...); key = body "id", type = body "type".
//   - github: X-Hub-Signature-256 (sha256=<hex>); key = X-GitHub-Delivery,
//     type = X-GitHub-Event. No timestamp.
//   - standard-webhooks, svix: webhook-id/-timestamp/-signature or the svix-
//     family of the same headers (both are accepted for both names); the whsec_
//     secret is base64-decoded; key = the id header, type = body "type" when the
//     body is a JSON object with a string "type".
//   - generic: a configurable HMAC scheme ([GenericConfig]); key from its id
//     header, otherwise derived.
//   - slack: X-Slack-Signature (v0=, over "v0:ts:body", 5m); key = body
//     event_id, derived for interactivity payloads and slash commands;
//     url_verification is a handshake.
//   - square: x-square-hmacsha256-signature (base64, over notification URL +
//     body); key = body event_id.
//   - paddle: Paddle-Signature (ts=...;h1=..., over "ts:body", 5s); key = body
//     event_id.
//   - twilio: X-Twilio-Signature (base64 HMAC-SHA1 over URL + sorted form
//     fields, or URL with bodySHA256 for JSON; URL tried with and without
//     port); key = I-Twilio-Idempotency-Token, else derived.
//   - linear: Linear-Signature (hex of body); body webhookTimestamp in
//     milliseconds (1m); key = Linear-Delivery.
//   - zoom: x-zm-signature (v0=, over "v0:ts:body", 5m); key derived (volatile
//     event_ts, download_token); endpoint.url_validation is a handshake.
//   - twitch: Twitch-Eventsub-Message-Signature (sha256=, over id + timestamp +
//     body, 10m); key = Twitch-Eventsub-Message-Id;
//     webhook_callback_verification is a handshake.
//   - intercom: X-Hub-Signature (sha1=); key = body id; the ping topic is a
//     handshake.
//   - gitlab: X-Gitlab-Token compared with the secret; key = Idempotency-Key,
//     else derived from the body (X-Gitlab-Event-UUID is shared by recursive
//     webhooks, so it is not an event id).
//   - shopify: X-Shopify-Hmac-Sha256 (base64); key = X-Shopify-Event-Id, else
//     X-Shopify-Webhook-Id; the newer names without X- (Shopify-Hmac-Sha256,
//     Shopify-Event-Id, Shopify-Topic) are read too.
//
// docs/providers.md lists every provider's sources, defaults and handshake.
// [RetryHorizon] says how long after its first attempt a provider may still
// deliver an event again under the same id, which a source's records must
// outlive.
//
// Config.KeyHeader and Config.KeyPath override where the key comes from;
// Config.TypePath overrides where the type comes from. When a scheme yields no
// key, one is derived from the body (docs/design.md §2): the body is parsed as JSON (a
// form-encoded body of twilio or slack becomes an object of its fields), the
// volatile fields (Config.VolatileFields, or the provider's default list) are
// removed, the rest is encoded canonically (sorted keys, no insignificant
// whitespace) and the key is "derived:" followed by the hex SHA-256 of the
// event type, a NUL byte and that canonical JSON. A body that is neither
// yields [ErrNoKey]: a key is never random and never a hash over bytes that
// may carry delivery timestamps.
//
// Each signature, timestamp, id and type header is read once, in the one
// spelling the provider's SDK accepts: hex signatures in lowercase, base64
// ones in their canonical encoding. A header that comes twice (two lines,
// the comma-joined value API Gateway makes of them, or two spellings of one
// header that disagree) is refused with a [*RepeatedHeaderError]. A key or
// type read from a JSON body must be a string (a configured key_path also
// takes an integer), and the members on the way to it may not come twice;
// for a derived key, no member anywhere may.
//
// Every Verify failure wraps one of the sentinel errors ([ErrMissingHeader],
// [ErrMalformedHeader], [ErrRepeatedHeader], [ErrBadSignature],
// [ErrOutsideTolerance], [ErrMalformedBody], [ErrNoKey], [ErrNoSecret]); a
// failure after the signature checked out always wraps [ErrNoKey], sometimes
// together with [ErrMalformedBody] (a body the scheme needs as JSON) or
// [ErrRepeatedHeader]. Callers map them to answers with errors.Is and never
// show the error text to the sender. Signatures are compared in constant
// time. No input makes the package panic.
//
// [Verifier.Sign] produces every header a real sender would send, for tests
// and local runs, so signatures are never crafted by hand.
package webhook
