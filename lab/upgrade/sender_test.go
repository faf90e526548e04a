//go:build upgrade

package upgrade

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/lab/ordering"
	"github.com/hookledger/hookledger/webhook"
)

// kind is what an event was sent for, and so how it must end.
type kind string

// The kinds of events, one per state the test leaves in flight, and the
// traffic's.
const (
	plain     kind = "plain"       // an invoice: charged once, notified once, done
	failed    kind = "failed"      // its charge refused (503) twice, then done
	exhausted kind = "exhausted"   // its charge refused (503) always: dead after maxAttempts failures
	declined  kind = "declined"    // its charge refused (400, permanent): dead, never charged
	midStep   kind = "mid-step"    // crashed right after its notification, before the ledger recorded it
	noMessage kind = "no-message"  // received, its message deleted; the sender delivers it again later
	queued    kind = "queued"      // received, its message waiting on the queue
	dlq       kind = "dead-letter" // received, its message moved to the dead-letter queue, its body nowhere else
	ordered   kind = "ordered"     // a subscription update on an InOrder route
)

// kinds lists them in the summary's order.
var kinds = []kind{plain, failed, exhausted, declined, midStep, noMessage, queued, dlq, ordered}

// mustDie reports whether events of the kind must end dead.
func (k kind) mustDie() bool { return k == exhausted || k == declined }

// charged reports whether an event of the kind must be charged (once).
func (k kind) charged() bool { return k != ordered && !k.mustDie() }

// event is one event the test sent.
type event struct {
	ID       string
	Kind     kind
	Phase    string // baseline, upgrade or rollback
	Customer string // invoices
	Sub      string // ordered: the subscription
	Seq      int    // ordered: its update's place (Stripe's created, in seconds past ordering.Base)
	Body     []byte
}

// sender delivers signed Stripe webhooks to the stack as Stripe does:
// again after any answer but 2xx, or none. It signs with the newest secret
// it knows, and after a 401 with the others. Each deploy by
// lab/scripts/e2e.sh stores a new one, which a new receiver reads at once
// and a warm one when its cache expires; after a 401 the sender reads the
// stored one (fresh), at most once a second.
type sender struct {
	v      *webhook.Verifier
	client *http.Client

	mu      sync.Mutex
	url     string
	secrets []string
	events  []*event
	byID    map[string]*event
	answers map[string]int // X-Hookledger-Result -> deliveries
	again   map[string]int // deliveries sent again, by the answer (a status, or "none")

	fresh   func(context.Context) (string, error) // the secret as stored now (nil: none)
	freshAt time.Time
}

func newSender() *sender {
	v, err := webhook.New(webhook.Config{Provider: "stripe"})
	if err != nil {
		panic(err)
	}
	return &sender{v: v, client: &http.Client{Timeout: 10 * time.Second, Transport: cli.LocalhostTransport()},
		byID: map[string]*event{}, answers: map[string]int{}, again: map[string]int{}}
}

// learn takes a deploy's webhook URL and stripe/acme secret.
func (s *sender) learn(webhookURL, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.url = strings.NewReplacer("{source}", "stripe", "{tenant}", "acme").Replace(webhookURL)
	s.newest(secret)
}

// newest puts secret first among those the sender signs with. s.mu held.
func (s *sender) newest(secret string) {
	s.secrets = append([]string{secret}, slices.DeleteFunc(s.secrets, func(x string) bool { return x == secret })...)
}

// refresh reads the stored secret, unless it was read in the last second.
func (s *sender) refresh(ctx context.Context) {
	s.mu.Lock()
	if s.fresh == nil || time.Since(s.freshAt) < time.Second {
		s.mu.Unlock()
		return
	}
	s.freshAt = time.Now()
	s.mu.Unlock()
	if secret, err := s.fresh(ctx); err == nil {
		s.count(func() { s.newest(secret) })
	}
}

// add records an event as sent (before its first delivery).
func (s *sender) add(e *event) *event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
	s.byID[e.ID] = e
	return e
}

// sent returns the events sent so far, in the order they were added.
func (s *sender) sent() []*event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// deliver posts the event until the receiver answers it with a 2xx and
// returns the answer's result; ctx's end is an error.
func (s *sender) deliver(ctx context.Context, e *event) (string, error) {
	for {
		s.mu.Lock()
		u, secrets := s.url, slices.Clone(s.secrets)
		s.mu.Unlock()
		status, result, err := 0, "", error(nil)
		for _, secret := range secrets {
			hdr, serr := s.v.Sign(webhook.Message{Body: e.Body, URL: u, Now: time.Now()}, secret)
			if serr != nil {
				return "", serr
			}
			if status, result, err = cli.Post(ctx, s.client, u, hdr, e.Body); err != nil || status != http.StatusUnauthorized {
				break
			}
		}
		if err == nil && status < 300 {
			s.count(func() { s.answers[result]++ })
			return result, nil
		}
		if status == http.StatusUnauthorized {
			s.refresh(ctx)
		}
		s.count(func() { s.again[cmp.Or(http.StatusText(status), "none")]++ })
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("delivery of %s: %w (last: %d %v)", e.ID, ctx.Err(), status, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (s *sender) count(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// invoice is an invoice.paid event whose charge names customer.
func invoice(id, customer string, amount int) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","type":"invoice.paid","created":%d,"data":{"object":{"id":"in_%s","object":"invoice","amount_paid":%d,"currency":"usd","customer":%q}}}`,
		id, time.Now().Unix(), id, amount, customer)
}

// update is the seq-th update of subscription sub (lab/ordering's body).
func update(id, sub string, seq int) []byte {
	return ordering.Update{ID: id, Sub: sub, Seq: seq}.Body()
}
