package browser

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/fakeclock"
	"github.com/hookledger/hookledger/ledger"
)

// The hostile strings a sender can put in an id, a type and a body.
const (
	scriptTag = `<script>window.pwned=1</script>`
	imgTag    = `"><img src=x onerror="window.pwned=1">`
)

// bulkEvents of tenant bulkTenant fill more than a page of the list.
const (
	bulkEvents = ledger.DefaultFindLimit + 10
	bulkTenant = "bulk"
)

// Events the test seeds, by what it looks for.
var (
	doneEvent      = ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_1QcVnR2eZvKYlo2C0pay7Ztq"}
	recoveredEvent = ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_1QcVqB2eZvKYlo2CkL9cTg1e"}
	crashedEvent   = ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_1QcVt02eZvKYlo2CxD4wRm8b"}
	deadEvent      = ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_1QcVvK2eZvKYlo2C7hUe3sNa"}
	hostileID      = ledger.Key{Source: "stripe", Tenant: "evil", ID: scriptTag}
	hostileType    = ledger.Key{Source: "stripe", Tenant: "evil", ID: imgTag}
)

// seeder writes events through the ledger's own API, on a clock it moves:
// each story happens in the past hour, as the pipeline would have written it.
type seeder struct {
	t     *testing.T
	l     *ledger.Ledger
	clock *fakeclock.Clock
}

func (s *seeder) at(ago time.Duration) { s.clock.Advance(time.Since(s.clock.Now()) - ago) }

func (s *seeder) tick(d time.Duration) { s.clock.Advance(d) }

func (s *seeder) create(id ledger.Key, typ, body string) {
	s.t.Helper()
	ctx := s.t.Context()
	digest := fmt.Sprintf("%x", len(body)) + "-digest"
	if _, created, err := s.l.Create(ctx, ledger.NewEvent{Key: id, Type: typ, BodySHA256: digest}); err != nil || !created {
		s.t.Fatalf("create %s: %v (created %v)", id, err, created)
	}
	if err := s.l.PutPayload(ctx, id, []byte(body), digest); err != nil {
		s.t.Fatal(err)
	}
}

func (s *seeder) claim(id ledger.Key) ledger.Lease {
	s.t.Helper()
	lease, err := s.l.Claim(s.t.Context(), id, time.Minute)
	if err != nil {
		s.t.Fatalf("claim %s: %v", id, err)
	}
	return lease
}

func (s *seeder) save(lease *ledger.Lease, changes ...ledger.StepChange) {
	s.t.Helper()
	rec, err := s.l.SaveSteps(s.t.Context(), *lease, changes...)
	if err != nil {
		s.t.Fatal(err)
	}
	lease.Record = rec
}

func (s *seeder) must(_ ledger.Record, err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
}

func done(name, result string) ledger.StepChange {
	return ledger.StepChange{Name: name, Status: ledger.StepDone, Result: result}
}

func started(name string) ledger.StepChange {
	return ledger.StepChange{Name: name, Status: ledger.StepStarted}
}

func invoice(id string, cents int) string {
	return fmt.Sprintf(`{"id":%q,"object":"event","type":"invoice.paid","data":{"object":{"object":"invoice","amount_paid":%d,"currency":"usd"}}}`, id, cents)
}

// seed writes the test's events: some done, one recovered after a crash in
// an at-most-once step (its check answered), one crashed mid-step whose
// lease has run out, one dead, a page and more of another tenant's, and two
// carrying markup in their id, type, body and error.
func (s *seeder) seed() {
	ctx := s.t.Context()
	for i, ev := range []struct {
		id  ledger.Key
		typ string
	}{
		{ledger.Key{Source: "github", Tenant: "acme", ID: "8a1f2c40-0f7e-11f1-9c2a-2e4a1b7d0c11"}, "push"},
		{ledger.Key{Source: "shopify", Tenant: "acme", ID: "b7c2e1d0-5a8f-4c3b-9e21-0d6f4a2c8e17"}, "orders/create"},
		{ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_1QcVkZ2eZvKYlo2CqW1bFh3x"}, "customer.subscription.updated"},
		{ledger.Key{Source: "github", Tenant: "acme", ID: "9d3e7b52-0f7e-11f1-8f4d-6c1a2b9e4d20"}, "pull_request"},
	} {
		s.at(time.Duration(58-i*3) * time.Minute)
		s.create(ev.id, ev.typ, `{"id":"`+ev.id.ID+`"}`)
		s.tick(40 * time.Millisecond)
		s.must(s.l.Complete(ctx, s.claim(ev.id)))
	}

	s.at(46 * time.Minute)
	s.create(doneEvent, "invoice.paid", invoice(doneEvent.ID, 4200))
	s.tick(35 * time.Millisecond)
	lease := s.claim(doneEvent)
	s.tick(120 * time.Millisecond)
	s.save(&lease, started("charge"))
	s.tick(480 * time.Millisecond)
	s.must(s.l.Complete(ctx, lease, done("charge", "ch_3QcVnS2eZvKYlo2C1x0ab9Kd"), done("notify", "ntf_8842")))

	// Run 1 dies in charge; the reclaimer finds its lease expired; run 2's
	// check finds the charge made and the run goes on.
	s.at(38 * time.Minute)
	s.create(recoveredEvent, "invoice.paid", invoice(recoveredEvent.ID, 990))
	s.tick(40 * time.Millisecond)
	lease = s.claim(recoveredEvent)
	s.tick(150 * time.Millisecond)
	s.save(&lease, started("charge"))
	s.tick(3 * time.Minute)
	rec, err := s.l.Get(ctx, recoveredEvent)
	if err != nil {
		s.t.Fatal(err)
	}
	s.must(s.l.Reset(ctx, rec, s.clock.Now()))
	s.tick(2 * time.Second)
	lease = s.claim(recoveredEvent)
	s.tick(260 * time.Millisecond)
	charge := done("charge", "ch_3QcVqC2eZvKYlo2C0p1qR7sT")
	charge.Checked = true
	s.must(s.l.Complete(ctx, lease, charge, done("notify", "ntf_8850")))

	// Crashed in an at-most-once step, lease run out, not yet re-driven.
	s.at(20 * time.Minute)
	s.create(crashedEvent, "invoice.paid", invoice(crashedEvent.ID, 1500))
	s.tick(30 * time.Millisecond)
	lease = s.claim(crashedEvent)
	s.tick(90 * time.Millisecond)
	s.save(&lease, started("charge"))

	// Failed once in notify, then buried: a permanent error.
	s.at(30 * time.Minute)
	s.create(deadEvent, "invoice.paid", invoice(deadEvent.ID, 2500))
	s.tick(30 * time.Millisecond)
	lease = s.claim(deadEvent)
	s.tick(200 * time.Millisecond)
	s.must(s.l.Fail(ctx, lease, "notify: mail API answered 503", 0, done("charge", "ch_3QcVvL2eZvKYlo2C9zQ4mN2p")))
	s.tick(30 * time.Second)
	lease = s.claim(deadEvent)
	s.tick(180 * time.Millisecond)
	s.must(s.l.Bury(ctx, lease, "permanent: notify: mailbox does not exist"))

	// Older than the rest, enough for a second page of the list.
	for i := range bulkEvents {
		s.at(3*time.Hour - time.Duration(i)*time.Minute)
		s.create(ledger.Key{Source: "github", Tenant: bulkTenant, ID: fmt.Sprintf("bulk-%03d", i)}, "push", "{}")
	}

	s.at(10 * time.Minute)
	s.create(hostileID, imgTag, `{"note":"`+scriptTag+imgTag+`"}`)
	s.must(s.l.Bury(ctx, s.claim(hostileID), "permanent: "+imgTag+scriptTag))
	s.create(hostileType, scriptTag, scriptTag)
	s.must(s.l.Complete(ctx, s.claim(hostileType), done("x", imgTag)))
}
