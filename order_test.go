package hookledger_test

import (
	"context"
	"fmt"
	"github.com/hookledger/hookledger/stripe"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/hookledgertest"
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
			r.HandleFunc("stripe", "x", ok, hookledger.InOrder(stripe.Object), hookledger.InOrder(stripe.Object))
		}, "twice"},
		"zero option": {func(r *hookledger.Router) { r.HandleFunc("stripe", "x", ok, hookledger.RouteOption{}) }, "zero RouteOption"},
		"nil HandleFunc": {func(r *hookledger.Router) {
			r.HandleFunc("stripe", "x", nil, hookledger.InOrder(stripe.Object))
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
	r.HandleFunc("stripe", "x", func(context.Context, *hookledger.Event) error { called = true; return nil }, hookledger.InOrder(stripe.Object))
	h := r.Lookup("stripe", "x")
	if h == nil || h.HandleEvent(context.Background(), nil) != nil || !called {
		t.Fatal("ordered route not reached")
	}
	if got := strings.Join(hookledger.RouteNames(r), " "); got != "stripe/x" {
		t.Fatalf("routes %q", got)
	}
}

func TestOrderOutsideOrderedRoutesIsZero(t *testing.T) {
	t.Parallel()
	ev := &hookledger.Event{Source: "stripe"}
	if ev.Order().Stale || ev.Order() != (hookledger.Order{}) {
		t.Fatalf("order %+v", ev.Order())
	}
}

func TestBuiltInOrderFuncs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f         hookledger.OrderFunc
		body      string
		res       string
		malformed []string // bodies whose position is there but cannot be read
	}{
		{stripe.Object, `{"created":1700000000,"data":{"object":{"id":"sub_1"}}}`, "sub_1", []string{
			`{"created":"abc","data":{"object":{"id":"sub_1"}}}`, `{"created":1.5,"data":{"object":{"id":"sub_1"}}}`,
			`{"created":1e3,"data":{"object":{"id":"sub_1"}}}`, `not json`,
		}},
		{hookledger.ShopifyResource, `{"admin_graphql_api_id":"gid://shopify/Order/1","updated_at":"2024-01-01T00:00:00Z"}`, "gid://shopify/Order/1", []string{
			`{"admin_graphql_api_id":"gid://shopify/Order/1","updated_at":"yesterday"}`, `{"admin_graphql_api_id":"gid://shopify/Order/1","updated_at":1700000000}`,
		}},
		{hookledger.PaddleEntity, `{"occurred_at":"2024-01-01T00:00:00.123456Z","data":{"id":"sub_01"}}`, "sub_01", []string{
			`{"occurred_at":"2024-13-01T00:00:00Z","data":{"id":"sub_01"}}`,
		}},
	} {
		p, err := tc.f(&hookledger.Event{Body: []byte(tc.body)})
		if err != nil || p.Resource != tc.res || p.At.Year() != 2023 && p.At.Year() != 2024 || p.Seq != 0 {
			t.Errorf("%s: %+v %v", tc.body, p, err)
		}
		if p, err := tc.f(&hookledger.Event{Body: []byte(`{}`)}); err != nil || p != (hookledger.Position{}) {
			t.Errorf("empty body: %+v %v, want no position and no error", p, err)
		}
		for _, body := range tc.malformed {
			if _, err := tc.f(&hookledger.Event{Body: []byte(body)}); err == nil {
				t.Errorf("%s: no error, want one", body)
			}
		}
	}
}

// Only a time position is judged against the event's arrival: one more
// than 5 minutes after it goes dead, whatever the provider; a sequence
// number is taken as it is. A malformed position goes dead too.
func TestPositionsTheRouteRefuses(t *testing.T) {
	t.Parallel()
	arrived := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	far := arrived.Add(5*time.Minute + time.Second)
	near := arrived.Add(5 * time.Minute)
	seq := func(n int64) hookledger.OrderFunc {
		return func(*hookledger.Event) (hookledger.Position, error) {
			return hookledger.Position{Resource: "r", Seq: n}, nil
		}
	}
	both := func(*hookledger.Event) (hookledger.Position, error) {
		return hookledger.Position{Resource: "r", At: arrived, Seq: 1}, nil
	}
	for _, tc := range []struct {
		name string
		f    hookledger.OrderFunc
		body string
		want hookledgertest.Status
	}{
		{"stripe far ahead", stripe.Object, fmt.Sprintf(`{"created":%d,"data":{"object":{"id":"sub_1"}}}`, far.Unix()), hookledgertest.Dead},
		{"stripe within 5 minutes", stripe.Object, fmt.Sprintf(`{"created":%d,"data":{"object":{"id":"sub_1"}}}`, near.Unix()), hookledgertest.Done},
		{"stripe in 2255", stripe.Object, `{"created":8993721600,"data":{"object":{"id":"sub_1"}}}`, hookledgertest.Dead},
		{"stripe malformed", stripe.Object, `{"created":"abc","data":{"object":{"id":"sub_1"}}}`, hookledgertest.Dead},
		{"shopify far ahead", hookledger.ShopifyResource, `{"admin_graphql_api_id":"gid://shopify/Order/1","updated_at":"` + far.Format(time.RFC3339) + `"}`, hookledgertest.Dead},
		{"paddle far ahead", hookledger.PaddleEntity, `{"occurred_at":"` + far.Format(time.RFC3339Nano) + `","data":{"id":"sub_01"}}`, hookledgertest.Dead},
		{"paddle in the past", hookledger.PaddleEntity, `{"occurred_at":"2020-01-01T00:00:00Z","data":{"id":"sub_01"}}`, hookledgertest.Done},
		{"a sequence number is not a time", seq(far.UnixNano()), `{}`, hookledgertest.Done},
		{"both At and Seq", both, `{}`, hookledgertest.Dead},
	} {
		r := hookledger.NewRouter()
		r.HandleFunc("p", "t", func(context.Context, *hookledger.Event) error { return nil }, hookledger.InOrder(tc.f))
		res := hookledgertest.New(r.Lookup("p", "t")).Run(t.Context(), hookledger.Event{Source: "p", Tenant: "t", ID: "evt_1", Type: "t",
			Body: []byte(tc.body), ReceivedAt: arrived})
		if res.Status != tc.want || tc.want == hookledgertest.Dead && !strings.Contains(res.Cause, "hookledger: InOrder: ") {
			t.Errorf("%s: %s (%s), want %s", tc.name, res.Status, res.Cause, tc.want)
		}
	}
}
