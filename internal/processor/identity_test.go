package processor_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/hookledger/hookledger/internal/engine"
	"log/slog"
	"strconv"
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

// identityFixture is a processor over a ledger whose clock the test moves,
// so that a record can expire and its key be used again, with a handler
// that records every body it runs.
type identityFixture struct {
	l     *ledger.Ledger
	h     *processor.Handler
	clock *fakeclock.Clock
	emf   *bytes.Buffer
	log   *bytes.Buffer
	mu    sync.Mutex
	ran   []string // "type body" per run
}

func identitySetup(t *testing.T) *identityFixture {
	t.Helper()
	cfg := awstest.Config(t)
	f := &identityFixture{clock: fakeclock.New(time.Now().UTC().Truncate(time.Millisecond)), emf: &bytes.Buffer{}, log: &bytes.Buffer{}}
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: awstest.Table(t, cfg), Retention: time.Hour, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	f.l = l
	r := hookledger.NewRouter()
	for _, typ := range []string{"invoice.paid", "invoice.voided"} {
		r.HandleFunc("stripe", typ, func(ctx context.Context, ev *hookledger.Event) error {
			f.mu.Lock()
			f.ran = append(f.ran, ev.Type+" "+string(ev.Body))
			f.mu.Unlock()
			return nil
		})
	}
	f.h = &processor.Handler{Ledger: l, Routes: engine.MustRoutes(r), Lease: time.Minute, MaxAttempts: 3,
		Metrics: metric.New(f.emf, "test"), Log: slog.New(slog.NewJSONHandler(f.log, nil))}
	return f
}

// message is an SQS record for m, delivered for the receives-th time.
func (f *identityFixture) message(t *testing.T, m queue.Message, receives int) events.SQSMessage {
	t.Helper()
	body, err := queue.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return events.SQSMessage{MessageId: m.ID + "-" + m.SHA256 + "-" + m.Type, Body: body,
		Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(receives)}}
}

// handle runs one message and reports whether it was acknowledged.
func (f *identityFixture) handle(t *testing.T, msg events.SQSMessage) bool {
	t.Helper()
	resp, err := f.h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{msg}})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.BatchItemFailures) == 0
}

func (f *identityFixture) runs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ran...)
}

// An earlier event's message under a key the sender used again after its
// record expired: the DLQ keeps messages 14 days, records expire after the
// retention. Redriven, it claimed the newer record and ran the earlier
// body (the record marked done), and the newer event's own message then
// found it done: its body never ran. The claim now requires the record's
// digest and type; the earlier message is parked (not acknowledged, so SQS
// moves it to the DLQ after maxReceiveCount), the record is left exactly as
// it was, its body is never kept as the newer record's payload, and the
// newer event runs once, with its own body.
func TestStaleDeadLetterUnderAReusedKeyIsParked(t *testing.T) {
	t.Parallel()
	f := identitySetup(t)
	ctx := t.Context()
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_reused"}
	if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "sha-earlier"}); err != nil {
		t.Fatal(err)
	}
	earlier := queue.Message{Source: id.Source, Tenant: id.Tenant, ID: id.ID, Type: "invoice.paid", SHA256: "sha-earlier", Body: []byte(`{"amount":100}`)}
	f.clock.Advance(2 * time.Hour) // the earlier record expired; its message waited in the DLQ
	if _, created, err := f.l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "sha-newer"}); err != nil || !created {
		t.Fatalf("the key used again: created=%v err=%v", created, err)
	}
	newer := queue.Message{Source: id.Source, Tenant: id.Tenant, ID: id.ID, Type: "invoice.paid", SHA256: "sha-newer", Body: []byte(`{"amount":250}`)}
	before, err := f.l.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}

	// The redriven dead letter, on its first delivery and on a later one
	// (which keeps its body before the claim, when it may be the only copy).
	for _, receives := range []int{1, 3} {
		if f.handle(t, f.message(t, earlier, receives)) {
			t.Fatalf("receive %d: the earlier event's message was acknowledged; want it left for the DLQ", receives)
		}
		after, err := f.l.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if after.Version != before.Version || after.Status != ledger.Received || after.Attempts != 0 {
			t.Fatalf("receive %d: the newer record changed: %+v, was %+v", receives, after, before)
		}
		if b, err := f.l.Payload(ctx, id); !errors.Is(err, ledger.ErrNotFound) {
			t.Fatalf("receive %d: payload %q %v; the earlier body became the newer record's", receives, b, err)
		}
	}
	if got := f.runs(); len(got) != 0 {
		t.Fatalf("handler ran %q for the earlier event's message", got)
	}
	if n := strings.Count(f.emf.String(), `"Parked":1`); n != 2 || strings.Count(f.emf.String(), `"NeedsOperator":1`) != 2 {
		t.Errorf("Parked counted %d times, want 2, each also as NeedsOperator:\n%s", n, f.emf)
	}
	line := f.log.String()
	for _, want := range []string{`"level":"ERROR"`, `"event_id":"evt_reused"`, `"message_sha256":"sha-earlier"`, `"record_sha256":"sha-newer"`,
		`"message_type":"invoice.paid"`, `"record_type":"invoice.paid"`, `"reason":"body digest differs"`} {
		if !strings.Contains(line, want) {
			t.Errorf("the parked message's log lacks %s:\n%s", want, line)
		}
	}
	if strings.Contains(line, `"amount"`) {
		t.Errorf("a log line carries the body:\n%s", line)
	}

	// The newer event's own message runs its body, once.
	if !f.handle(t, f.message(t, newer, 1)) {
		t.Fatal("the newer event's message was not acknowledged")
	}
	if got := f.runs(); len(got) != 1 || got[0] != `invoice.paid {"amount":250}` {
		t.Fatalf("handler ran %q, want the newer body once", got)
	}
	// The dead letter again, now that the record is done: still not the
	// record's event, still parked (not taken for a spent copy and dropped).
	if f.handle(t, f.message(t, earlier, 4)) {
		t.Error("the earlier event's message was acknowledged once the newer record was done")
	}
	if rec, _ := f.l.Get(ctx, id); rec.Status != ledger.Done || rec.Attempts != 1 {
		t.Errorf("record %+v, want done after one attempt", rec)
	}
	if got := f.runs(); len(got) != 1 {
		t.Errorf("handler ran %q, want the newer body once", got)
	}
}

// A message whose type is not its record's (a duplicate with another
// unsigned type header, re-enqueued under the record by an earlier
// receiver), or that carries no digest under a record with one, is parked
// like a stale one; the event runs from its own message, routed by the
// record's type.
func TestMessageWithAnotherTypeOrNoDigestIsParked(t *testing.T) {
	t.Parallel()
	f := identitySetup(t)
	ctx := t.Context()
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_typed"}
	if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "sha-1"}); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"amount":100}`)
	for _, m := range []queue.Message{
		{Source: id.Source, Tenant: id.Tenant, ID: id.ID, Type: "invoice.voided", SHA256: "sha-1", Body: body},
		{Source: id.Source, Tenant: id.Tenant, ID: id.ID, Type: "", SHA256: "sha-1", Body: body},
		{Source: id.Source, Tenant: id.Tenant, ID: id.ID, Type: "invoice.paid", Body: body},
	} {
		for _, receives := range []int{1, 2} {
			if f.handle(t, f.message(t, m, receives)) {
				t.Errorf("message with type %q digest %q (receive %d) acknowledged; want it parked", m.Type, m.SHA256, receives)
			}
		}
	}
	if rec, _ := f.l.Get(ctx, id); rec.Status != ledger.Received || rec.Attempts != 0 || rec.Version != 1 {
		t.Errorf("record %+v changed", rec)
	}
	if _, err := f.l.Payload(ctx, id); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("a payload was kept from a message that is not the record's event: %v", err)
	}
	if !f.handle(t, f.message(t, queue.Message{Source: id.Source, Tenant: id.Tenant, ID: id.ID, Type: "invoice.paid", SHA256: "sha-1", Body: body}, 1)) {
		t.Fatal("the event's own message was not acknowledged")
	}
	if got := f.runs(); len(got) != 1 || got[0] != `invoice.paid {"amount":100}` {
		t.Errorf("handler ran %q, want invoice.paid once", got)
	}
}
