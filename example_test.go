package hookledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/hookledger/hookledger/stripe"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/hookledgertest"
)

// A handler with two steps: a charge through an API that honours
// idempotency keys, and an e-mail through one that does not. The test
// helper runs it in memory, crashes it after the e-mail was sent, and runs
// the retry: the charge is not repeated (recorded done), and the e-mail is
// not sent again (its check finds it).
func Example() {
	charges, mails := map[string]int{}, map[string]int{}
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "invoice.paid", func(ctx context.Context, ev *hookledger.Event) error {
		id, err := ev.Step(ctx, "charge", func(ctx context.Context, key string) (string, error) {
			charges[key]++ // a payments API deduplicates by key
			return "ch_1", nil
		})
		if err != nil {
			return err
		}
		_, err = ev.Step(ctx, "email", func(ctx context.Context, key string) (string, error) {
			mails[key]++ // sent, with the key attached as a reference
			return "receipt for " + id, nil
		}, hookledger.AtMostOnce(), hookledger.Check(func(ctx context.Context, key string) (string, error) {
			if mails[key] > 0 {
				return "found by reference", nil
			}
			return "", hookledger.ErrNotDone
		}))
		return err
	})

	tr := hookledgertest.New(r.Lookup("stripe", "invoice.paid"))
	ev := hookledger.Event{Source: "stripe", Tenant: "acme", ID: "evt_1", Type: "invoice.paid"}
	fmt.Println(tr.Run(context.Background(), ev, hookledgertest.CrashAfter("email")).Status)
	res := tr.Run(context.Background(), ev)
	fmt.Println(res.Status, res.Steps["charge"], "|", res.Steps["email"])
	fmt.Println("charge ran", tr.Runs("charge"), "time(s), email ran", tr.Runs("email"), "time(s)")
	// Output:
	// crashed
	// done done: ch_1 | done: found by reference
	// charge ran 1 time(s), email ran 1 time(s)
}

// A route that keeps Stripe subscription updates in order: the handler
// writes the subscription's state from the payload, and an older update
// that arrives after a newer one is skipped instead of moving the
// subscription back. The test helper keeps positions per resource as the
// ledger does.
func ExampleInOrder() {
	state := map[string]string{}
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "customer.subscription.updated", func(ctx context.Context, ev *hookledger.Event) error {
		var e struct {
			Data struct {
				Object struct{ ID, Status string }
			}
		}
		if err := json.Unmarshal(ev.Body, &e); err != nil {
			return hookledger.Permanent(err)
		}
		state[e.Data.Object.ID] = e.Data.Object.Status
		return nil
	}, hookledger.InOrder(stripe.Object), hookledger.SkipStale())

	update := func(id string, created int64, status string) hookledger.Event {
		body := fmt.Sprintf(`{"id":%q,"created":%d,"data":{"object":{"id":"sub_1","status":%q}}}`, id, created, status)
		return hookledger.Event{Source: "stripe", Tenant: "acme", ID: id, Type: "customer.subscription.updated", Body: []byte(body)}
	}
	tr := hookledgertest.New(r.Lookup("stripe", "customer.subscription.updated"))
	fmt.Println(tr.Run(context.Background(), update("evt_2", 1700000300, "active")).Status)
	fmt.Println(tr.Run(context.Background(), update("evt_1", 1700000000, "incomplete")).Status) // delivered late
	fmt.Println(state["sub_1"])
	// Output:
	// done
	// stale
	// active
}
