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
//
// Config.KeyHeader and Config.KeyPath override where the key comes from;
// Config.TypePath overrides where the type comes from. When a scheme yields no
// key, one is derived from the body (DESIGN §2): the body is parsed as JSON, the
// Config.VolatileFields are removed, the rest is encoded canonically (sorted
// keys, no insignificant whitespace) and the key is "derived:" followed by the
// hex SHA-256 of the event type, a NUL byte and that canonical JSON. A body that
// is not JSON yields [ErrNoKey]: a key is never random and never a hash over
// bytes that may carry delivery timestamps.
//
// Every Verify failure wraps exactly one of the sentinel errors ([ErrMissingHeader],
// [ErrMalformedHeader], [ErrBadSignature], [ErrOutsideTolerance],
// [ErrMalformedBody], [ErrNoKey], [ErrNoSecret]); callers map them to answers
// with errors.Is and never show the error text to the sender. Signatures are
// compared in constant time. No input makes the package panic.
//
// [Verifier.Sign] produces every header a real sender would send, for tests
// and local runs, so signatures are never crafted by hand.
package webhook
