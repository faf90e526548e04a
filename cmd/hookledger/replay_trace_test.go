package main

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

const (
	recordTrace  = "Root=1-6b1161f1-9fbe27bf175039d5222eae39;Parent=53995c3f42cd8ad8;Sampled=1"
	messageTrace = "Root=1-6b1161f3-00112233445566778899aabb;Parent=0123456789abcdef;Sampled=0"
)

// traceHeaders drains url and returns each message's AWSTraceHeader by event id.
func (f *replayFixture) traceHeaders(t *testing.T, url string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range awstest.DrainMessages(t, f.sq, url) {
		msg, err := queue.Decode(aws.ToString(m.Body))
		if err != nil {
			t.Fatal(err)
		}
		out[msg.ID] = m.Attributes[queue.TraceAttribute]
	}
	return out
}

// A replay re-sends the event with its record's trace header: the replayed
// run links back to the first delivery. A dead letter redriven with --dlq
// takes its record's too, or keeps its own when the record has none.
func TestReplaySendsTheRecordsTrace(t *testing.T) {
	t.Parallel()
	f := replaySetup(t)
	ctx := t.Context()
	traced := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_replay_traced"}
	if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: traced, Type: "invoice.paid", BodySHA256: "sha-t", Trace: recordTrace}); err != nil {
		t.Fatal(err)
	}
	if err := f.l.PutPayload(ctx, traced, []byte(`{"id":"evt_replay_traced"}`), "sha-t"); err != nil {
		t.Fatal(err)
	}
	lease, err := f.l.Claim(ctx, traced, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Bury(ctx, lease, "charge: payments API refused with 402"); err != nil {
		t.Fatal(err)
	}
	if code := f.r.run(ctx, replayOptions{source: traced.Source, tenant: traced.Tenant, id: traced.ID}); code != 0 {
		t.Fatalf("replay: exit %d, stderr %q", code, f.err)
	}
	if got := f.traceHeaders(t, f.qurl)[traced.ID]; got != recordTrace {
		t.Errorf("replayed message's header %q, want the record's %q", got, recordTrace)
	}

	// Two dead letters, each with its own header: one of the traced
	// record (now received again), one of a record from before traces.
	bare := f.event(t, f.l, "evt_replay_bare", ledger.Failed)
	dlq := &queue.Sender{API: f.sq, URL: f.dlq}
	for _, m := range []queue.Message{
		{Source: "stripe", Tenant: "acme", ID: traced.ID, Type: "invoice.paid", SHA256: "sha-t", Body: []byte(`{"id":"evt_replay_traced"}`), Trace: messageTrace},
		{Source: "stripe", Tenant: "acme", ID: bare.ID, Type: "invoice.paid", SHA256: "sha-" + bare.ID, Body: []byte(`{"id":"evt_replay_bare"}`), Trace: messageTrace},
	} {
		if err := dlq.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if code := f.r.run(ctx, replayOptions{dlq: f.dlq}); code != 0 {
		t.Fatalf("redrive: exit %d, stderr %q", code, f.err)
	}
	got := f.traceHeaders(t, f.qurl)
	if got[traced.ID] != recordTrace || got[bare.ID] != messageTrace {
		t.Errorf("redriven headers %v: want the record's for %s, the message's own for %s", got, traced.ID, bare.ID)
	}
}
