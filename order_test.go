package hookledger_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hookledger/hookledger"
)

func TestRouteOptionsRefuseMistakes(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, *hookledger.Event) error { return nil }
	for name, tc := range map[string]struct {
		register func(r *hookledger.Router)
		want     string
	}{
		"SkipStale without InOrder": {func(r *hookledger.Router) { r.HandleFunc("stripe", "x", ok, hookledger.SkipStale()) }, "SkipStale needs InOrder"},
		"InOrder(nil)":              {func(r *hookledger.Router) { r.HandleFunc("stripe", "x", ok, hookledger.InOrder(nil)) }, "InOrder(nil)"},
		"InOrder twice": {func(r *hookledger.Router) {
			r.HandleFunc("stripe", "x", ok, hookledger.InOrder(hookledger.StripeObject), hookledger.InOrder(hookledger.StripeObject))
		}, "twice"},
		"zero option": {func(r *hookledger.Router) { r.HandleFunc("stripe", "x", ok, hookledger.RouteOption{}) }, "zero RouteOption"},
		"nil HandleFunc": {func(r *hookledger.Router) {
			r.HandleFunc("stripe", "x", nil, hookledger.InOrder(hookledger.StripeObject))
		}, "nil handler"},
	} {
		func() {
			defer func() {
				p := recover()
				if p == nil || !strings.Contains(p.(string), tc.want) {
					t.Errorf("%s: panic %v, want one mentioning %q", name, p, tc.want)
				}
			}()
			tc.register(hookledger.NewRouter())
		}()
	}
}

// A route with options still routes as before, and its handler sees the
// event (nil included, as before).
func TestOrderedRouteStillRoutes(t *testing.T) {
	t.Parallel()
	r := hookledger.NewRouter()
	called := false
	r.HandleFunc("stripe", "x", func(context.Context, *hookledger.Event) error { called = true; return nil }, hookledger.InOrder(hookledger.StripeObject))
	h := r.Lookup("stripe", "x")
	if h == nil || h.HandleEvent(context.Background(), nil) != nil || !called {
		t.Fatal("ordered route not reached")
	}
	if got := strings.Join(r.Routes(), " "); got != "stripe/x" {
		t.Fatalf("routes %q", got)
	}
}

func TestOrderOutsideOrderedRoutesIsZero(t *testing.T) {
	t.Parallel()
	ev := &hookledger.Event{Source: "stripe"}
	if ev.Stale() || ev.Order() != (hookledger.Order{}) {
		t.Fatalf("order %+v", ev.Order())
	}
}

func TestBuiltInOrderFuncs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f    hookledger.OrderFunc
		body string
		res  string
	}{
		{hookledger.StripeObject, `{"created":1700000000,"data":{"object":{"id":"sub_1"}}}`, "sub_1"},
		{hookledger.ShopifyResource, `{"admin_graphql_api_id":"gid://shopify/Order/1","updated_at":"2024-01-01T00:00:00Z"}`, "gid://shopify/Order/1"},
		{hookledger.PaddleEntity, `{"occurred_at":"2024-01-01T00:00:00.123456Z","data":{"id":"sub_01"}}`, "sub_01"},
	} {
		res, pos, ok := tc.f(&hookledger.Event{Body: []byte(tc.body)})
		if !ok || res != tc.res || pos <= 0 {
			t.Errorf("%s: %q %d %v", tc.body, res, pos, ok)
		}
		if _, _, ok := tc.f(&hookledger.Event{Body: []byte(`{}`)}); ok {
			t.Errorf("a position in an empty body")
		}
	}
}
