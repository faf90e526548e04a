package hookledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/hookledgertest"
)

func TestRouterPrefersSpecificRoutes(t *testing.T) {
	t.Parallel()
	r := hookledger.NewRouter()
	mark := func(name string) hookledger.Handler {
		return hookledger.HandlerFunc(func(context.Context, *hookledger.Event) error { return errors.New(name) })
	}
	r.Handle(hookledger.Any, hookledger.Any, mark("any"))
	r.Handle("stripe", hookledger.Any, mark("stripe-any"))
	r.Handle(hookledger.Any, "invoice.paid", mark("any-invoice"))
	r.Handle("stripe", "invoice.paid", mark("stripe-invoice"))
	for _, tc := range [][3]string{
		{"stripe", "invoice.paid", "stripe-invoice"}, {"stripe", "x", "stripe-any"},
		{"github", "invoice.paid", "any-invoice"}, {"github", "push", "any"},
	} {
		err := r.Lookup(tc[0], tc[1]).HandleEvent(context.Background(), nil)
		if err.Error() != tc[2] {
			t.Errorf("%s/%s routed to %v, want %s", tc[0], tc[1], err, tc[2])
		}
	}
	if hookledger.NewRouter().Lookup("a", "b") != nil {
		t.Error("empty router found a handler")
	}
	if got := strings.Join(hookledger.RouteNames(r), " "); got != "*/* */invoice.paid stripe/* stripe/invoice.paid" {
		t.Errorf("routes %q", got)
	}
}

func TestExplicitRoutesDoNotCatchOtherSources(t *testing.T) {
	t.Parallel()
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "invoice.paid", func(context.Context, *hookledger.Event) error { return nil })
	// A delivery for a source configured under another name (or replayed
	// into another source's URL) does not reach the charge.
	if r.Lookup("shopify", "invoice.paid") != nil || r.Lookup("generic", "invoice.paid") != nil {
		t.Fatal("a route for stripe caught another source")
	}
}

func TestRouterRefusesMistakesAtRegistration(t *testing.T) {
	t.Parallel()
	ok := hookledger.HandlerFunc(func(context.Context, *hookledger.Event) error { return nil })
	for name, register := range map[string]func(r *hookledger.Router){
		"empty source": func(r *hookledger.Router) { r.Handle("", "x", ok) },
		"empty type":   func(r *hookledger.Router) { r.Handle("stripe", "", ok) },
		"nil handler":  func(r *hookledger.Router) { r.Handle("stripe", "x", nil) },
		"duplicate": func(r *hookledger.Router) {
			r.Handle("stripe", "x", ok)
			r.Handle("stripe", "x", ok)
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic at registration", name)
				}
			}()
			register(hookledger.NewRouter())
		}()
	}
}

// TestRouterRefusesRoutesThatCannotMatch: a glob or a name no source can
// have would register fine and silently never match; it stops the
// processor at cold start instead, saying what to write.
func TestRouterRefusesRoutesThatCannotMatch(t *testing.T) {
	t.Parallel()
	ok := hookledger.HandlerFunc(func(context.Context, *hookledger.Event) error { return nil })
	for _, tc := range []struct{ source, typ, want string }{
		{"stripe", "invoice.*", "exact event type"},
		{"stripe", "*.paid", "exact event type"},
		{"Stripe ", "invoice.paid", "source's name"},
		{"*stripe", "invoice.paid", "source's name"},
		{"stripe/acme", "invoice.paid", "source's name"},
		{strings.Repeat("s", 65), "invoice.paid", "source's name"},
		{"stripe", strings.Repeat("t", 257), "exact event type"},
		{"stripe", "invoice\x00paid", "exact event type"},
	} {
		func() {
			defer func() {
				p := recover()
				if p == nil || !strings.Contains(fmt.Sprint(p), tc.want) {
					t.Errorf("route %q/%q: panic %v, want one saying to write the %s", tc.source, tc.typ, p, tc.want)
				}
			}()
			hookledger.NewRouter().Handle(tc.source, tc.typ, ok)
		}()
	}
	// What deliveries can carry is accepted.
	r := hookledger.NewRouter()
	for _, rt := range [][2]string{{"stripe", "invoice.paid"}, {"shopify", "orders/create"}, {"my_source-2.v1", "Push Hook"}, {hookledger.Any, "ping"}} {
		r.Handle(rt[0], rt[1], ok)
	}
}

func TestIdempotencyKeyIsDeterministicAndDistinct(t *testing.T) {
	t.Parallel()
	key := func(source, tenant, id, step string) string {
		return (&hookledger.Event{Source: source, Tenant: tenant, ID: id}).IdempotencyKey(step)
	}
	k := key("stripe", "acme", "evt_1", "charge")
	ev := &hookledger.Event{Source: "stripe", Tenant: "acme", ID: "evt_1"}
	if k != ev.IdempotencyKey("charge") || len(k) != 43 || !strings.HasPrefix(k, "hl_") {
		t.Fatalf("key %q not stable or wrong form", k)
	}
	for _, o := range []string{
		key("stripe", "acme", "evt_1", "email"),
		key("stripe", "globex", "evt_1", "charge"),
		key("shopify", "acme", "evt_1", "charge"),
		key("stripe", "acme", "evt_2", "charge"),
		key("stripe#acme", "", "evt_1", "charge"),
		key("stripe", "acme#evt_1", "", "charge"),
	} {
		if o == k {
			t.Errorf("collision: %q", o)
		}
	}
}

func TestStepOutsideThePipelineSaysSo(t *testing.T) {
	t.Parallel()
	ev := &hookledger.Event{Source: "stripe", Tenant: "acme", ID: "evt_1"}
	ran := false
	_, err := ev.Step(t.Context(), "charge", func(context.Context, string) (string, error) { ran = true; return "", nil })
	if err == nil || ran || !strings.Contains(err.Error(), "hookledgertest") {
		t.Fatalf("Step on a bare event: ran %v, err %v; want an error pointing at hookledgertest", ran, err)
	}
	if err := ev.ExtendLease(t.Context(), 0); err == nil {
		t.Fatal("ExtendLease on a bare event succeeded")
	}
}

func TestPermanent(t *testing.T) {
	t.Parallel()
	base := errors.New("card declined")
	p := hookledger.Permanent(base)
	if !hookledgertest.IsPermanent(p) || !errors.Is(p, base) || hookledgertest.IsPermanent(base) || hookledger.Permanent(nil) != nil {
		t.Fatalf("Permanent(%v) = %v", base, p)
	}
}
