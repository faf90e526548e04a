package processor_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/stripe"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/fakeclock"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

const subUpdated = "customer.subscription.updated"

// ordered is a processor whose Stripe subscription routes keep their
// events in order: "customer.subscription.updated" skips stale events,
// "customer.subscription.deleted" lets its handler see them. applied
// lists, per subscription, the created times the handlers applied, in the
// order they did; hold, when set, makes the handler wait for it. The
// ledger and the processor read clock; crash, when set, is the point where
// the next run stops dead (as a killed process would).
type ordered struct {
	l       *ledger.Ledger
	clock   *fakeclock.Clock
	crash   string
	h       *processor.Handler
	emf     *bytes.Buffer
	mu      sync.Mutex
	applied map[string][]int64
	sawOld  []bool
	hold    chan struct{}
	meter   *awstest.Meter
}

func setupOrdered(t *testing.T) *ordered {
	t.Helper()
	m := awstest.NewMeter()
	cfg := awstest.Config(t, m.APIOption)
	c := fakeclock.New(time.Now().UTC())
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: awstest.Table(t, cfg), Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	o := &ordered{l: l, clock: c, applied: map[string][]int64{}, emf: &bytes.Buffer{}, meter: m}
	apply := func(ctx context.Context, ev *hookledger.Event) error {
		o.mu.Lock()
		hold := o.hold
		o.mu.Unlock()
		if hold != nil {
			<-hold
		}
		pl := ev.Order()
		o.mu.Lock()
		o.applied[pl.Resource] = append(o.applied[pl.Resource], pl.Position/int64(time.Second))
		o.sawOld = append(o.sawOld, ev.Order().Stale)
		o.mu.Unlock()
		return nil
	}
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", subUpdated, apply, hookledger.InOrder(stripe.Object), hookledger.SkipStale())
	r.HandleFunc("stripe", "customer.subscription.deleted", apply, hookledger.InOrder(stripe.Object))
	o.h = &processor.Handler{Ledger: l, Routes: engine.MustRoutes(r), Lease: time.Minute, OrderWait: 300 * time.Millisecond,
		Metrics: metric.New(o.emf, "test"), Now: c.Now,
		Point: func(p string) {
			o.mu.Lock()
			hit := p == o.crash
			if hit {
				o.crash = ""
			}
			o.mu.Unlock()
			if hit {
				runtime.Goexit()
			}
		}}
	return o
}

// event creates the record of a subscription event and returns its message.
func (o *ordered) event(t *testing.T, key, typ, sub string, created int64) events.SQSMessage {
	t.Helper()
	return o.message(t, key, typ, fmt.Sprintf(`{"id":%q,"object":"event","type":%q,"created":%d,"data":{"object":{"id":%q,"object":"subscription"}}}`, key, typ, created, sub))
}

// message creates the record of an event with this body, received now, and
// returns its message.
func (o *ordered) message(t *testing.T, key, typ, body string) events.SQSMessage {
	t.Helper()
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: key}
	if _, _, err := o.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: typ, BodySHA256: "x"}); err != nil {
		t.Fatal(err)
	}
	msg, err := queue.Encode(queue.Message{Source: "stripe", Tenant: "acme", ID: key, Type: typ, SHA256: "x", Body: []byte(body),
		ReceivedAt: o.clock.Now().UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	return events.SQSMessage{MessageId: "m-" + key, Body: msg}
}

func (o *ordered) handle(t *testing.T, msgs ...events.SQSMessage) map[string]bool {
	t.Helper()
	resp, err := o.h.Handle(t.Context(), events.SQSEvent{Records: msgs})
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	return failed
}

func (o *ordered) record(t *testing.T, key string) ledger.Record {
	t.Helper()
	rec, err := o.l.Get(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: key})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func (o *ordered) appliedTo(sub string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return fmt.Sprint(o.applied[sub])
}

func TestStaleEventIsSkippedAndRecorded(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t)
	newer := o.event(t, "evt_new", subUpdated, "sub_1", 300)
	older := o.event(t, "evt_old", subUpdated, "sub_1", 100)
	if f := o.handle(t, newer); len(f) != 0 {
		t.Fatalf("newer: %v", f)
	}
	if f := o.handle(t, older); len(f) != 0 {
		t.Fatalf("older: %v", f)
	}
	if got := o.appliedTo("sub_1"); got != "[300]" {
		t.Fatalf("applied %s", got)
	}
	rec := o.record(t, "evt_old")
	if rec.Status != ledger.Done || !strings.Contains(rec.Skipped, "stale") || !strings.Contains(rec.Skipped, "evt_new") {
		t.Fatalf("stale record %+v", rec)
	}
	if o.record(t, "evt_new").Skipped != "" {
		t.Fatal("the applied event is marked skipped")
	}
	if n := strings.Count(o.emf.String(), `"Stale":1`); n != 1 {
		t.Fatalf("Stale counted %d times:\n%s", n, o.emf)
	}
}

// Without SkipStale the handler runs and decides; the stale event does not
// take the resource.
func TestStaleEventRunsWhenTheHandlerDecides(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t)
	o.handle(t, o.event(t, "evt_new", "customer.subscription.deleted", "sub_1", 300))
	o.handle(t, o.event(t, "evt_old", "customer.subscription.deleted", "sub_1", 100))
	if fmt.Sprint(o.sawOld) != "[false true]" || o.record(t, "evt_old").Status != ledger.Done {
		t.Fatalf("stale as seen %v", o.sawOld)
	}
	if it, _ := o.l.GetOrder(t.Context(), "stripe", "acme", "sub_1"); it.Holder != "evt_new" || it.Position != 300*int64(time.Second) {
		t.Fatalf("order item %+v", it)
	}
}

// A newer event that arrives while an older one's run holds the resource
// waits for it, in process, and runs right after.
func TestNewerEventWaitsForTheRunningOne(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t)
	o.hold = make(chan struct{})
	first := o.event(t, "evt_a", subUpdated, "sub_1", 100)
	second := o.event(t, "evt_b", subUpdated, "sub_1", 200)
	done := make(chan map[string]bool)
	go func() { done <- o.handle(t, first) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if it, err := o.l.GetOrder(t.Context(), "stripe", "acme", "sub_1"); err == nil && it.Holder == "evt_a" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("evt_a never took its resource")
		}
		time.Sleep(10 * time.Millisecond)
	}
	go func() { done <- o.handle(t, second) }()
	time.Sleep(100 * time.Millisecond)
	o.mu.Lock()
	hold := o.hold
	o.hold = nil
	o.mu.Unlock()
	close(hold) // evt_a applies, then evt_b may
	for range 2 {
		if f := <-done; len(f) != 0 {
			t.Fatalf("failures %v", f)
		}
	}
	if got := o.appliedTo("sub_1"); got != "[100 200]" {
		t.Fatalf("applied %s", got)
	}
}

// A resource busy for longer than the processor waits: the event is given
// back (failed, its attempts not spent), the message goes back to the
// queue, and its next delivery runs it once the holder is done.
func TestBusyResourceGivesTheEventBack(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t)
	ctx := t.Context()
	// Another event's run holds sub_1 (a slow worker elsewhere).
	o.event(t, "evt_holder", subUpdated, "sub_1", 100)
	holder, err := o.l.ClaimEvent(ctx, ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_holder"}, time.Minute, ledger.Identity{Type: subUpdated, BodySHA256: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.l.TakeOrder(ctx, holder, "sub_1", 100*int64(time.Second), false); err != nil {
		t.Fatal(err)
	}
	msg := o.event(t, "evt_b", subUpdated, "sub_1", 200)
	start := time.Now()
	if f := o.handle(t, msg); !f["m-evt_b"] {
		t.Fatalf("busy event acknowledged: %v", f)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Errorf("gave up after %v, before OrderWait", waited)
	}
	rec := o.record(t, "evt_b")
	if rec.Status != ledger.Failed || rec.Failures != 0 || rec.LeaseOwner != "" || !strings.Contains(rec.LastError, "evt_holder") {
		t.Fatalf("busy record %+v", rec)
	}
	if n := strings.Count(o.emf.String(), `"ResourceBusy":1`); n != 1 {
		t.Fatalf("ResourceBusy counted %d times", n)
	}
	if _, err := o.l.Complete(ctx, holder); err != nil {
		t.Fatal(err)
	}
	if f := o.handle(t, msg); len(f) != 0 {
		t.Fatalf("redelivery: %v", f)
	}
	if got := o.appliedTo("sub_1"); got != "[200]" || o.record(t, "evt_b").Status != ledger.Done {
		t.Fatalf("applied %s", got)
	}
}

// Events of one resource in one batch run at once: they take turns, and
// what ends applied is the newest.
func TestOneBatchOfOneResource(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t)
	o.h.OrderWait = 5 * time.Second
	var msgs []events.SQSMessage
	for _, c := range []int64{500, 100, 400, 200, 300, 600, 150, 550, 50, 450} {
		msgs = append(msgs, o.event(t, fmt.Sprintf("evt_%d", c), subUpdated, "sub_1", c))
	}
	if f := o.handle(t, msgs...); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	o.mu.Lock()
	got := o.applied["sub_1"]
	o.mu.Unlock()
	if len(got) == 0 || got[len(got)-1] != 600 {
		t.Fatalf("applied %v: the newest (600) is not last", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("applied %v: %d after %d", got, got[i], got[i-1])
		}
	}
}

// No position in the event: applied unordered, with a warning and a metric.
func TestEventWithoutPositionRunsUnordered(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t)
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_bal"}
	o.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: subUpdated, BodySHA256: "x"})
	body, _ := queue.Encode(queue.Message{Source: "stripe", Tenant: "acme", ID: "evt_bal", Type: subUpdated, SHA256: "x", Body: []byte(`{"id":"evt_bal","created":1}`)})
	if f := o.handle(t, events.SQSMessage{MessageId: "m", Body: body}); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	if o.appliedTo("") != "[0]" || !strings.Contains(o.emf.String(), `"Unordered":1`) {
		t.Fatalf("applied %v, metrics %s", o.applied, o.emf)
	}
}

// olderDeadThenNewer leaves evt_old (created 100) dead before it ran, and
// evt_new (300) applied: the operator's replay of evt_old comes next.
func (o *ordered) olderDeadThenNewer(t *testing.T) (events.SQSMessage, ledger.Key) {
	t.Helper()
	ctx := t.Context()
	old := o.event(t, "evt_old", subUpdated, "sub_1", 100)
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_old"}
	lease, err := o.l.ClaimEvent(ctx, id, time.Minute, ledger.Identity{Type: subUpdated, BodySHA256: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.l.Bury(ctx, lease, "gave up"); err != nil {
		t.Fatal(err)
	}
	o.handle(t, o.event(t, "evt_new", subUpdated, "sub_1", 300))
	return old, id
}

// A replayed older event stays stale.
func TestReplayedOlderEventStaysStale(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t)
	old, id := o.olderDeadThenNewer(t)
	if _, err := o.l.Replay(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	o.handle(t, old)
	if rec := o.record(t, "evt_old"); rec.Status != ledger.Done || rec.Skipped == "" || o.appliedTo("sub_1") != "[300]" {
		t.Fatalf("replayed: %+v, applied %s", rec, o.appliedTo("sub_1"))
	}
}

// Replayed with --apply-stale, it runs, and its position becomes the
// resource's.
func TestReplayApplyStaleAppliesTheOlderEvent(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t)
	old, id := o.olderDeadThenNewer(t)
	if _, err := o.l.ReplayApplyStale(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	o.handle(t, old)
	if got := o.appliedTo("sub_1"); got != "[300 100]" || o.record(t, "evt_old").Skipped != "" {
		t.Fatalf("forced replay: applied %s", got)
	}
	if it, _ := o.l.GetOrder(t.Context(), "stripe", "acme", "sub_1"); it.Position != 100*int64(time.Second) || it.Holder != "evt_old" {
		t.Fatalf("order item after the forced replay %+v", it)
	}
}

// What ordering costs the processor: one write more (the take), and one or
// two reads; a stale event's skip is its complete, with no take.
func TestOrderedEventCosts(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t)
	measure := func(msg events.SQSMessage, wantUpdates, wantReads int) {
		t.Helper()
		o.meter.Reset()
		if f := o.handle(t, msg); len(f) != 0 {
			t.Fatalf("failures %v", f)
		}
		calls := o.meter.Snapshot()
		if calls["DynamoDB.UpdateItem"] != wantUpdates || calls["DynamoDB.GetItem"] != wantReads {
			t.Errorf("calls %v, want %d UpdateItem and %d GetItem", calls, wantUpdates, wantReads)
		}
	}
	measure(o.event(t, "evt_1", subUpdated, "sub_1", 100), 3, 1) // claim, take, complete; the item
	measure(o.event(t, "evt_2", subUpdated, "sub_1", 200), 3, 2) // and the holder's record
	measure(o.event(t, "evt_0", subUpdated, "sub_1", 50), 2, 1)  // claim, skip; the item
}

// A run applied its update and was killed before its completion was
// recorded; a newer update took the resource; the killed run's retry is
// stale. Its record, outcome and metric say that an earlier run may have
// applied it, not that it never ran. An event that never ran, or was only
// given back while its resource was busy, stays plain stale.
func TestStaleAfterARunSaysSo(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t)
	killed := o.event(t, "evt_killed", subUpdated, "sub_1", 100)
	o.crash = "processor.after_effect"
	if f := o.handle(t, killed); !f["m-evt_killed"] || o.crash != "" {
		t.Fatalf("the killed run: failures %v, crash point %q not hit", f, o.crash)
	}
	o.clock.Advance(2 * time.Minute) // its lease runs out
	if f := o.handle(t, o.event(t, "evt_newer", subUpdated, "sub_1", 300)); len(f) != 0 {
		t.Fatalf("newer: %v", f)
	}
	if f := o.handle(t, killed); len(f) != 0 {
		t.Fatalf("retry: %v", f)
	}
	if got := o.appliedTo("sub_1"); got != "[100 300]" {
		t.Fatalf("applied %s", got)
	}
	rec := o.record(t, "evt_killed")
	if rec.Status != ledger.Done || !strings.HasPrefix(rec.Skipped, "skipped as stale after a run that may have applied it (1 run interrupted)") {
		t.Fatalf("the killed run's retry: %s, skipped %q", rec.Status, rec.Skipped)
	}

	// Never ran: plain stale.
	o.handle(t, o.event(t, "evt_older", subUpdated, "sub_1", 50))
	// Given back while sub_2 was busy, then stale: it never ran either.
	ctx := t.Context()
	o.event(t, "evt_holder", subUpdated, "sub_2", 100)
	holder, err := o.l.ClaimEvent(ctx, ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_holder"}, time.Minute, ledger.Identity{Type: subUpdated, BodySHA256: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.l.TakeOrder(ctx, holder, "sub_2", 100*int64(time.Second), false); err != nil {
		t.Fatal(err)
	}
	waited := o.event(t, "evt_waited", subUpdated, "sub_2", 200)
	if f := o.handle(t, waited); !f["m-evt_waited"] {
		t.Fatalf("busy event acknowledged: %v", f)
	}
	if _, err := o.l.Complete(ctx, holder); err != nil {
		t.Fatal(err)
	}
	o.handle(t, o.event(t, "evt_latest", subUpdated, "sub_2", 300))
	o.handle(t, waited)
	for _, k := range []string{"evt_older", "evt_waited"} {
		if rec := o.record(t, k); rec.Status != ledger.Done || !strings.HasPrefix(rec.Skipped, "skipped as stale: resource") {
			t.Errorf("%s: %s, skipped %q", k, rec.Status, rec.Skipped)
		}
	}
	if got := o.appliedTo("sub_2"); got != "[300]" {
		t.Fatalf("applied to sub_2 %s", got)
	}
	emf := o.emf.String()
	if a, s := strings.Count(emf, `"StaleAfterRun":1`), strings.Count(emf, `"Stale":1`); a != 1 || s != 2 {
		t.Fatalf("StaleAfterRun counted %d times, Stale %d; want 1 and 2:\n%s", a, s, emf)
	}
}

// An update whose position lies far after its arrival (a producer's clock
// years ahead, a body put on the bus with created in 2255) must not take
// its resource: it would make every real update stale for the retention.
// It goes dead, alarmed, with the cause; later real updates apply. A
// position a minute ahead (clock drift) is applied.
func TestFarFuturePositionDoesNotTakeTheResource(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t)
	now := o.clock.Now()
	far := time.Date(2255, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	if f := o.handle(t, o.event(t, "evt_2255", subUpdated, "sub_1", far)); len(f) != 0 {
		t.Fatalf("far-future event: %v", f)
	}
	rec := o.record(t, "evt_2255")
	if rec.Status != ledger.Dead || !strings.Contains(rec.LastError, "after the event arrived") {
		t.Fatalf("far-future event: %s, %q", rec.Status, rec.LastError)
	}
	if !strings.Contains(o.emf.String(), `"NeedsOperator":1`) {
		t.Fatalf("no NeedsOperator:\n%s", o.emf)
	}
	for i, at := range []int64{now.Unix() - 20, now.Unix() - 10, now.Add(time.Minute).Unix()} {
		if f := o.handle(t, o.event(t, fmt.Sprintf("evt_real_%d", i), subUpdated, "sub_1", at)); len(f) != 0 {
			t.Fatalf("real update %d: %v", i, f)
		}
	}
	if got, want := o.appliedTo("sub_1"), fmt.Sprint([]int64{now.Unix() - 20, now.Unix() - 10, now.Add(time.Minute).Unix()}); got != want {
		t.Fatalf("applied %s, want %s", got, want)
	}
}

// A position that is there but malformed is a permanent failure: the
// event goes dead with the cause, never applied unordered over newer state.
func TestMalformedPositionIsPermanent(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t)
	o.handle(t, o.event(t, "evt_new", subUpdated, "sub_1", 300))
	for i, created := range []string{`"abc"`, `1.5`, `1e3`, `true`} {
		k := fmt.Sprintf("evt_bad_%d", i)
		body := `{"id":"` + k + `","object":"event","created":` + created + `,"data":{"object":{"id":"sub_1","object":"subscription"}}}`
		if f := o.handle(t, o.message(t, k, subUpdated, body)); len(f) != 0 {
			t.Fatalf("created %s: %v", created, f)
		}
		if rec := o.record(t, k); rec.Status != ledger.Dead || !strings.Contains(rec.LastError, "created") {
			t.Errorf("created %s: %s, %q", created, rec.Status, rec.LastError)
		}
	}
	if got := o.appliedTo("sub_1"); got != "[300]" {
		t.Fatalf("applied %s; want only the well-formed update", got)
	}
	if got := o.appliedTo(""); got != "[]" {
		t.Fatalf("applied unordered %s", got)
	}
}
