package subscription_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/effect/subscription"
	"github.com/hookledger/hookledger/hookledgertest"
	"github.com/hookledger/hookledger/stripe"
)

func TestOlderStateIsSkipped(t *testing.T) {
	var mu sync.Mutex
	var puts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		puts = append(puts, r.URL.Path)
	}))
	defer srv.Close()
	r := hookledger.NewRouter()
	r.Handle("stripe", "customer.subscription.updated", &subscription.Sync{Billing: srv.URL, Client: srv.Client()},
		hookledger.InOrder(stripe.Object), hookledger.SkipStale())
	tr := hookledgertest.New(r.Lookup("stripe", "customer.subscription.updated"))
	ev := func(id string, created int) hookledger.Event {
		return hookledger.Event{Source: "stripe", Tenant: "acme", ID: id, Type: "customer.subscription.updated",
			Body: fmt.Appendf(nil, `{"id":%q,"created":%d,"data":{"object":{"id":"sub_1","status":"active"}}}`, id, created)}
	}
	if res := tr.Run(t.Context(), ev("evt_new", 200)); res.Status != hookledgertest.Done {
		t.Fatal(res)
	}
	if res := tr.Run(t.Context(), ev("evt_old", 100)); res.Status != hookledgertest.Stale {
		t.Fatal(res)
	}
	if len(puts) != 1 {
		t.Fatalf("%d puts, want 1", len(puts))
	}
}
