package hookledgertest_test

import (
	"context"
	"fmt"
	"github.com/hookledger/hookledger/stripe"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/hookledgertest"
)

// subscription is a Stripe customer.subscription.updated event of sub at
// created (Unix seconds) with status.
func subscription(id, sub string, created int64, status string) hookledger.Event {
	body := fmt.Sprintf(`{"id":%q,"object":"event","type":"customer.subscription.updated","created":%d,"data":{"object":{"id":%q,"object":"subscription","status":%q}}}`,
		id, created, sub, status)
	return hookledger.Event{Source: "stripe", Tenant: "acme", ID: id, Type: "customer.subscription.updated", Body: []byte(body)}
}

// store is the handler's view of subscriptions: what it applied, in order.
type store struct {
	mu      sync.Mutex
	applied []string // event ids
}

func (s *store) handler() hookledger.HandlerFunc {
	return func(ctx context.Context, ev *hookledger.Event) error {
		s.mu.Lock()
		s.applied = append(s.applied, ev.ID)
		s.mu.Unlock()
		return nil
	}
}

func TestOlderEventAfterNewerIsStale(t *testing.T) {
	t.Parallel()
	var s store
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "customer.subscription.updated", s.handler(), hookledger.InOrder(stripe.Object), hookledger.SkipStale())
	tr := hookledgertest.New(r.Lookup("stripe", "customer.subscription.updated"))
	ctx := t.Context()

	newer := subscription("evt_b", "sub_1", 1700000300, "active")
	older := subscription("evt_a", "sub_1", 1700000000, "incomplete")
	if res := tr.Run(ctx, newer); res.Status != hookledgertest.Done || res.Order.Stale || res.Order.Known {
		t.Fatalf("newer first: %v, order %+v", res, res.Order)
	}
	res := tr.Run(ctx, older)
	if res.Status != hookledgertest.Stale || !res.Order.Stale || res.Order.Newest != 1700000300*int64(time.Second) || res.Order.NewestEvent != "evt_b" {
		t.Fatalf("older after newer: %v, order %+v", res, res.Order)
	}
	// Stale is final, like done: a redelivery runs nothing.
	if res := tr.Run(ctx, older); res.Status != hookledgertest.Stale {
		t.Fatalf("redelivery of the stale event: %v", res)
	}
	// Another subscription is another resource.
	if res := tr.Run(ctx, subscription("evt_c", "sub_2", 1600000000, "active")); res.Status != hookledgertest.Done {
		t.Fatalf("other resource: %v", res)
	}
	if fmt.Sprint(s.applied) != "[evt_b evt_c]" {
		t.Fatalf("applied %v", s.applied)
	}
}

func TestWithoutSkipStaleTheHandlerDecides(t *testing.T) {
	t.Parallel()
	var stale []bool
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "customer.subscription.updated", func(ctx context.Context, ev *hookledger.Event) error {
		stale = append(stale, ev.Order().Stale)
		return nil
	}, hookledger.InOrder(stripe.Object))
	tr := hookledgertest.New(r.Lookup("stripe", "customer.subscription.updated"))
	tr.Run(t.Context(), subscription("evt_b", "sub_1", 200, "active"))
	if res := tr.Run(t.Context(), subscription("evt_a", "sub_1", 100, "incomplete")); res.Status != hookledgertest.Done || !res.Order.Stale {
		t.Fatalf("stale run: %v %+v", res, res.Order)
	}
	// The stale event did not take the resource: a newer one is judged
	// against evt_b's position, not evt_a's.
	res := tr.Run(t.Context(), subscription("evt_c", "sub_1", 150, "past_due"))
	if !res.Order.Stale || res.Order.Newest != 200*int64(time.Second) {
		t.Fatalf("judged against %+v", res.Order)
	}
	if fmt.Sprint(stale) != "[false true true]" {
		t.Fatalf("Stale() as the handler saw it: %v", stale)
	}
}

// Stripe counts whole seconds: two updates within a second tie. Both are
// applied, in turn, and the second says so.
func TestEqualPositionsAreAppliedInTurnAndFlagged(t *testing.T) {
	t.Parallel()
	var s store
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "customer.subscription.updated", s.handler(), hookledger.InOrder(stripe.Object), hookledger.SkipStale())
	tr := hookledgertest.New(r.Lookup("stripe", "customer.subscription.updated"))
	first := tr.Run(t.Context(), subscription("evt_1", "sub_1", 100, "incomplete"))
	second := tr.Run(t.Context(), subscription("evt_2", "sub_1", 100, "active"))
	if first.Status != hookledgertest.Done || first.Order.Tie || second.Status != hookledgertest.Done || !second.Order.Tie || second.Order.NewestEvent != "evt_1" {
		t.Fatalf("first %v %+v; second %v %+v", first, first.Order, second, second.Order)
	}
	if len(s.applied) != 2 {
		t.Fatalf("applied %v", s.applied)
	}
}

// An event that took its resource and crashed keeps it: its retry takes it
// again (it holds it), and an older event that comes meanwhile stays stale.
func TestCrashedHolderRetakesItsResource(t *testing.T) {
	t.Parallel()
	var s store
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "customer.subscription.updated", func(ctx context.Context, ev *hookledger.Event) error {
		if _, err := ev.Step(ctx, "save", func(context.Context, string) (string, error) { return "ok", nil }); err != nil {
			return err
		}
		return s.handler()(ctx, ev)
	}, hookledger.InOrder(stripe.Object), hookledger.SkipStale())
	tr := hookledgertest.New(r.Lookup("stripe", "customer.subscription.updated"))
	newer := subscription("evt_b", "sub_1", 200, "active")
	if res := tr.Run(t.Context(), newer, hookledgertest.CrashAfter("save")); res.Status != hookledgertest.Crashed {
		t.Fatal(res)
	}
	if res := tr.Run(t.Context(), subscription("evt_a", "sub_1", 100, "incomplete")); res.Status != hookledgertest.Stale {
		t.Fatalf("older event after a crashed newer one: %v", res)
	}
	if res := tr.Run(t.Context(), newer); res.Status != hookledgertest.Done || res.Order.Stale {
		t.Fatalf("retry of the holder: %v %+v", res, res.Order)
	}
}

// No position: applied unordered; a body that is not what the OrderFunc
// expects never blocks the route.
func TestNoPositionRunsUnordered(t *testing.T) {
	t.Parallel()
	var s store
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "balance.available", s.handler(), hookledger.InOrder(stripe.Object), hookledger.SkipStale())
	tr := hookledgertest.New(r.Lookup("stripe", "balance.available"))
	ev := hookledger.Event{Source: "stripe", Tenant: "acme", ID: "evt_x", Type: "balance.available", Body: []byte(`{"id":"evt_x","created":5,"data":{"object":{"object":"balance"}}}`)}
	if res := tr.Run(t.Context(), ev); res.Status != hookledgertest.Done || res.Order.Resource != "" {
		t.Fatalf("%v %+v", res, res.Order)
	}
}

// Two events of one resource at once take turns: the older one, arriving
// while the newer one runs, waits for it and is then stale.
func TestConcurrentRunsOfOneResourceTakeTurns(t *testing.T) {
	t.Parallel()
	inside := make(chan struct{})
	release := make(chan struct{})
	var s store
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "customer.subscription.updated", func(ctx context.Context, ev *hookledger.Event) error {
		if ev.ID == "evt_b" {
			close(inside)
			<-release
		}
		return s.handler()(ctx, ev)
	}, hookledger.InOrder(stripe.Object), hookledger.SkipStale())
	tr := hookledgertest.New(r.Lookup("stripe", "customer.subscription.updated"))
	done := make(chan hookledgertest.Result)
	go func() { done <- tr.Run(t.Context(), subscription("evt_b", "sub_1", 200, "active")) }()
	<-inside
	// evt_c is newer than evt_b: it must wait for evt_b's run.
	go func() { done <- tr.Run(t.Context(), subscription("evt_c", "sub_1", 300, "canceled")) }()
	time.Sleep(20 * time.Millisecond)
	s.mu.Lock()
	early := len(s.applied)
	s.mu.Unlock()
	close(release)
	<-done
	<-done
	if early != 0 || fmt.Sprint(s.applied) != "[evt_b evt_c]" {
		t.Fatalf("applied %v (%d before evt_b finished)", s.applied, early)
	}
}

func TestHandBuiltEventOnAnOrderedRoute(t *testing.T) {
	t.Parallel()
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "x", func(context.Context, *hookledger.Event) error { return nil }, hookledger.InOrder(stripe.Object))
	ev := subscription("evt_1", "sub_1", 1, "active")
	err := r.Lookup("stripe", "x").HandleEvent(t.Context(), &ev)
	if err == nil || !strings.Contains(err.Error(), "InOrder") {
		t.Fatalf("hand-built event: %v", err)
	}
}

// EveryCrash on an InOrder route: every scenario's event has the same
// position, so each is a tie after the first, applied in turn, and every
// scenario ends done.
func TestEveryCrashOnAnOrderedRoute(t *testing.T) {
	t.Parallel()
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "customer.subscription.updated", func(ctx context.Context, ev *hookledger.Event) error {
		_, err := ev.Step(ctx, "save", func(context.Context, string) (string, error) { return "ok", nil })
		return err
	}, hookledger.InOrder(stripe.Object), hookledger.SkipStale())
	tr := hookledgertest.New(r.Lookup("stripe", "customer.subscription.updated"))
	for _, sc := range tr.EveryCrash(t.Context(), subscription("evt_1", "sub_1", 100, "active")) {
		if sc.Status != hookledgertest.Done {
			t.Error(sc)
		}
	}
}
