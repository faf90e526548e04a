package effect_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/effect"
	"github.com/hookledger/hookledger/hookledgertest"
)

// fake is the shop and the mailer: reservations deduplicated by key,
// messages searchable by reference.
type fake struct {
	mu       sync.Mutex
	reserved map[string]int
	messages map[string]int
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.URL.Path == "/reservations":
		f.reserved[r.Header.Get("Idempotency-Key")]++
	case r.URL.Path == "/messages" && r.Method == http.MethodPost:
		var m struct{ Reference string }
		json.NewDecoder(r.Body).Decode(&m)
		f.messages[m.Reference]++
	case r.URL.Path == "/messages":
		out := []string{}
		if f.messages[r.URL.Query().Get("reference")] > 0 {
			out = append(out, "msg")
		}
		json.NewEncoder(w).Encode(out)
	}
}

func TestOrderReceiptOnceWhateverCrashes(t *testing.T) {
	f := &fake{reserved: map[string]int{}, messages: map[string]int{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	r := hookledger.NewRouter()
	if err := effect.Register(r, hookledger.SettingsMap(map[string]string{"SHOP_URL": srv.URL, "MAILER_URL": srv.URL, "BILLING_URL": srv.URL})); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile("testdata/order.json")
	if err != nil {
		t.Fatal(err)
	}
	tr := hookledgertest.New(r.Lookup("shopify", "orders/create"))
	ev := hookledger.Event{Source: "shopify", Tenant: "acme", ID: "wh_1", Type: "orders/create", Body: body}
	for _, opt := range []hookledgertest.Option{hookledgertest.CrashAfter("reserve"), hookledgertest.CrashAfterStart("receipt")} {
		if res := tr.Run(t.Context(), ev, opt); res.Status != hookledgertest.Crashed {
			t.Fatal(res)
		}
	}
	if res := tr.Run(t.Context(), ev); res.Status != hookledgertest.Done {
		t.Fatal(res)
	}
	if n := f.messages[ev.IdempotencyKey("receipt")]; n != 1 {
		t.Fatalf("%d receipts, want 1", n)
	}
}

func TestRegisterNamesMissingSettings(t *testing.T) {
	err := effect.Register(hookledger.NewRouter(), hookledger.SettingsMap(map[string]string{}))
	if err == nil {
		t.Fatal("no error without settings")
	}
}
