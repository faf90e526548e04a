package effect_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/effect"
	"github.com/hookledger/hookledger/hookledgertest"
)

func TestReserveOnceDespiteCrashes(t *testing.T) {
	var mu sync.Mutex
	reserved := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		reserved[r.Header.Get("Idempotency-Key")]++
	}))
	defer srv.Close()
	r := hookledger.NewRouter()
	if err := effect.Register(r, hookledger.SettingsMap(map[string]string{"INVENTORY_URL": srv.URL})); err != nil {
		t.Fatal(err)
	}
	tr := hookledgertest.New(r.Lookup("shopify", "orders/create"))
	ev := hookledger.Event{Source: "shopify", Tenant: "acme", ID: "wh_1", Type: "orders/create",
		Body: []byte(`{"id":1,"line_items":[{"sku":"tee-m","quantity":2}]}`)}
	if res := tr.Run(t.Context(), ev, hookledgertest.CrashAfter("reserve")); res.Status != hookledgertest.Crashed {
		t.Fatal(res)
	}
	if res := tr.Run(t.Context(), ev); res.Status != hookledgertest.Done {
		t.Fatal(res)
	}
	if n := reserved[ev.IdempotencyKey("reserve")]; n != 2 {
		t.Fatalf("%d requests under the step's key; want 2 (the crash came before the step was recorded, and the API dedupes by key)", n)
	}
}
