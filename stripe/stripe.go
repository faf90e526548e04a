// Package stripe helps effects handle Stripe's events: Object keeps a
// route's events in order per object, and the rest reads thin events, the
// API v2 notifications that carry only the event's id, type, time, account
// (context) and changed object (related_object): the handler fetches the rest.
//
// hookledger takes thin events like snapshot ones, over HTTP and from
// Stripe's EventBridge partner source; one source may take both kinds. A
// handler reads the notification with Parse and fetches the full event or
// the object's current state with a Fetcher:
//
//	f, err := stripe.NewFetcher(stripe.Options{Key: s.String("STRIPE_API_KEY")})
//	...
//	r.HandleFunc("stripe", "v1.billing.meter.error_report_triggered", func(ctx context.Context, ev *hookledger.Event) error {
//		meter, err := f.FetchObject(ctx, ev) // the meter as it is now
//		if err != nil {
//			return err // retried later; Permanent when no retry can help
//		}
//		_, err = ev.Step(ctx, "alert", func(ctx context.Context, key string) (string, error) {
//			return alerts.Send(ctx, key, meter)
//		})
//		return err
//	})
//
// A fetch is a read, deliberately not a step: a step recorded done is
// skipped on a retry, leaving later steps without the document, and a
// retry should read the object's current state again. Fetch at the start of
// every attempt, and return ids, not documents, from the steps that follow.
package stripe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/providerapi"
)

// ThinObject is a thin event notification's "object"; a snapshot event's is "event".
const ThinObject = providerapi.StripeThinObject

// Thin is a thin event notification, as Stripe delivers it.
type Thin struct {
	ID       string    `json:"id"`
	Object   string    `json:"object"`
	Type     string    `json:"type"`
	Created  time.Time `json:"created"`
	Livemode bool      `json:"livemode"`
	// Context is the connected account (acct_...) the event happened on,
	// "" for the account's own events. A fetch sends it as Stripe-Context,
	// so a platform's key reads the connected account's data.
	Context string `json:"context,omitempty"`
	// RelatedObject is the object the event is about; nil when it has
	// none.
	RelatedObject *RelatedObject `json:"related_object,omitempty"`
	// Reason says what caused the event (an API request, with its id and
	// idempotency key), as Stripe wrote it; nil when absent.
	Reason json.RawMessage `json:"reason,omitempty"`
}

// RelatedObject is a thin event's reference to the object that changed.
type RelatedObject struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	URL  string `json:"url"` // the API path that returns it, e.g. /v1/billing/meters/mtr_123
}

// ErrNotThin: the event is not a thin event notification (a snapshot
// event, whose body holds the object itself, or not Stripe's at all).
var ErrNotThin = errors.New("stripe: not a thin event notification")

// IsThin reports whether ev's body is a thin event notification.
func IsThin(ev *hookledger.Event) bool {
	_, err := Parse(ev)
	return err == nil
}

// Parse reads ev's body as a thin event notification. An error wraps
// ErrNotThin, and is permanent: no retry changes a body.
func Parse(ev *hookledger.Event) (Thin, error) {
	var t Thin
	if ev == nil {
		return t, hookledger.Permanent(fmt.Errorf("%w: no event", ErrNotThin))
	}
	dec := json.NewDecoder(bytes.NewReader(ev.Body))
	if err := dec.Decode(&t); err != nil {
		return Thin{}, hookledger.Permanent(fmt.Errorf("%w: the body is not one: %v", ErrNotThin, err))
	}
	if t.Object != ThinObject {
		return Thin{}, hookledger.Permanent(fmt.Errorf("%w: its object is %q, want %q", ErrNotThin, t.Object, ThinObject))
	}
	if t.ID == "" {
		return Thin{}, hookledger.Permanent(fmt.Errorf("%w: it has no id", ErrNotThin))
	}
	return t, nil
}
