package effect_test

import (
	"testing"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/hookledgertest"

	"{{cookiecutter.module}}/effect"
)

var paid = hookledger.Event{Source: "stripe", Tenant: "acme", ID: "evt_1", Type: "invoice.paid",
	Body: []byte(`{"id":"evt_1","type":"invoice.paid","data":{"object":{"customer":"cus_1"}}}`)}

// tester registers the routes with settings, as the processor does at cold start.
func tester(t *testing.T, settings map[string]string) *hookledgertest.Tester {
	t.Helper()
	r := hookledger.NewRouter()
	if err := effect.Register(r, hookledger.SettingsMap(settings)); err != nil {
		t.Fatal(err)
	}
	return hookledgertest.New(r.Lookup("stripe", "invoice.paid"))
}

func TestGreets(t *testing.T) {
	res := tester(t, map[string]string{"GREETING": "welcome"}).Run(t.Context(), paid)
	if res.Status != hookledgertest.Done || res.Steps["greet"] != "done: welcome, cus_1 of acme" {
		t.Fatal(res)
	}
}

// TestSurvivesCrashes crashes the handler at every point a process can die,
// each followed by the pipeline's retries: the event always ends done.
func TestSurvivesCrashes(t *testing.T) {
	for _, sc := range tester(t, nil).EveryCrash(t.Context(), paid) {
		if sc.Status != hookledgertest.Done {
			t.Error(sc)
		}
	}
}

func TestNotAnInvoiceIsPermanent(t *testing.T) {
	ev := paid
	ev.Body = []byte(`not json`)
	if res := tester(t, nil).Run(t.Context(), ev); res.Status != hookledgertest.Dead {
		t.Fatal(res)
	}
}
