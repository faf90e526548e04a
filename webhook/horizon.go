package webhook

import (
	"fmt"
	"strings"
	"time"
)

// Horizon is a provider's retry horizon: how long after an event's first
// attempt it may deliver it again under the same id, by retries or a
// documented redelivery window. A record that expires sooner lets such a
// late delivery through as a new event, and its effects run twice.
type Horizon struct {
	// Duration is the horizon: ConservativeHorizon, with Documented false,
	// where the provider documents none that could be confirmed.
	Duration   time.Duration
	Documented bool   // Duration rests on the provider's own documentation
	Basis      string // what Duration rests on, in a sentence, for errors and docs/providers.md
	Source     string // where the provider documents it ("" when it does not)
}

// ConservativeHorizon is the horizon of a provider that documents none that
// could be confirmed: the longest documented one (Stripe, Paddle and Square
// retry for three days). Such a sender is assumed as patient as the most
// patient documented one.
const ConservativeHorizon = 72 * time.Hour

// horizons is the table behind RetryHorizon, one entry per provider. Keep it
// in step with docs/providers.md ("Retry horizons").
var horizons = map[string]Horizon{
	providerStripe: {Duration: 72 * time.Hour, Documented: true,
		Basis:  "Stripe retries live-mode deliveries for up to three days",
		Source: "https://docs.stripe.com/webhooks#automatic-retries"},
	providerGitHub: {Duration: 72 * time.Hour, Documented: true,
		Basis:  "GitHub does not retry, but deliveries of the past three days can be redelivered with the same X-GitHub-Delivery (seven days on GitHub Enterprise Server)",
		Source: "https://docs.github.com/en/webhooks/testing-and-troubleshooting-webhooks/redelivering-webhooks"},
	providerStandard: {Duration: ConservativeHorizon,
		Basis: "Standard Webhooks leaves the retry schedule to each sender; none is documented"},
	providerSvix: {Duration: 28 * time.Hour, Documented: true,
		Basis:  "Svix retries after 5s, 5m, 30m, 2h, 5h, 10h and 10h: about 27h35m after the first attempt",
		Source: "https://docs.svix.com/retries"},
	providerShopify: {Duration: 4 * time.Hour, Documented: true,
		Basis:  "Shopify retries 8 times over 4 hours",
		Source: "https://shopify.dev/docs/apps/build/webhooks/subscribe/https"},
	providerSlack: {Duration: 10 * time.Minute, Documented: true,
		Basis:  "Slack retries three times: at once, after 1 minute and after 5 minutes (rounded up to 10 minutes)",
		Source: "https://api.slack.com/apis/events-api#retries"},
	providerSquare: {Duration: 72 * time.Hour, Documented: true,
		Basis:  "Square retries unsuccessful deliveries for up to 72 hours (an older version of the page said 24; the longer is used)",
		Source: "https://developer.squareup.com/docs/webhooks/troubleshooting"},
	providerPaddle: {Duration: 72 * time.Hour, Documented: true,
		Basis:  "Paddle retries live deliveries up to 60 times over three days",
		Source: "https://developer.paddle.com/webhooks/respond-to-webhooks"},
	providerTwilio: {Duration: ConservativeHorizon,
		Basis: "Twilio retries only as connection overrides or Webhook Rules say; no bound is documented for the rules"},
	providerLinear: {Duration: ConservativeHorizon,
		Basis: "Linear retries with backoff; the schedule could not be confirmed"},
	providerZoom: {Duration: 85 * time.Minute, Documented: true,
		Basis:  "Zoom retries three times: after 5 minutes, 20 minutes later and 60 minutes later",
		Source: "https://developers.zoom.us/blog/webhook-delays/"},
	providerTwitch: {Duration: ConservativeHorizon,
		Basis: "Twitch EventSub resends with the same message id but documents no schedule"},
	providerIntercom: {Duration: ConservativeHorizon,
		Basis: "Intercom documents pausing and suspending failing subscriptions but no retry schedule"},
	providerGitLab: {Duration: ConservativeHorizon,
		Basis: "GitLab does not retry automatically, but a manual resend keeps Idempotency-Key; its window could not be confirmed"},
	providerGeneric: {Duration: ConservativeHorizon,
		Basis: "a generic sender's retry schedule is unknown"},
}

// RetryHorizon returns provider's retry horizon (see Horizon), or an error
// naming the known providers.
func RetryHorizon(provider string) (Horizon, error) {
	h, ok := horizons[provider]
	if !ok {
		return Horizon{}, fmt.Errorf("webhook: provider %q unknown; allowed: %s", provider, strings.Join(Providers(), ", "))
	}
	return h, nil
}
