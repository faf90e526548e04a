package receiver_test

import (
	"bytes"
	"context"
	"github.com/hookledger/hookledger/internal/engine"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// A GitHub record still received (its first receiver died before the
// enqueue) is re-enqueued by the duplicate that finds it, and the message
// took that duplicate's X-GitHub-Event, a header the signature does not
// cover: a delivery with the same body and id but another type ran under
// that type's route. The message now carries the record's type and
// digest, the mismatch is logged and counted, and the event runs once,
// routed as recorded.
func TestDuplicateWithAnotherTypeIsRequeuedAsTheRecord(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var emf bytes.Buffer
	f.h.Metrics = metric.New(&emf, "test")
	body := []byte(`{"ref":"refs/heads/main","after":"9a8b7c"}`)
	delivery := func(typ string) events.APIGatewayV2HTTPRequest {
		return f.request(t, f.github, "/webhooks/github/acme", githubSecret, webhook.Message{ID: "d-typed", Type: typ, Body: body})
	}
	if res := f.handle(t, delivery("push")).Headers["X-Hookledger-Result"]; res != "accepted" {
		t.Fatalf("first delivery: %s", res)
	}
	if n := f.queued(t); n != 1 { // its message, lost
		t.Fatalf("queue held %d, want the first message", n)
	}
	f.clock.Advance(receiver.DefaultRequeueAfter)
	if res := f.handle(t, delivery("release")).Headers["X-Hookledger-Result"]; res != "duplicate_requeued" {
		t.Fatalf("duplicate with another type: %s, want duplicate_requeued", res)
	}
	if !strings.Contains(emf.String(), `"TypeMismatch":1`) {
		t.Errorf("the type mismatch was not counted:\n%s", emf.String())
	}
	msgs := awstest.Drain(t, f.sqs, f.queue)
	if len(msgs) != 1 {
		t.Fatalf("queue held %d, want the re-enqueued message", len(msgs))
	}
	m, err := queue.Decode(msgs[0])
	if err != nil {
		t.Fatal(err)
	}
	rec, err := f.l.Get(t.Context(), ledger.Key{Source: "github", Tenant: "acme", ID: "d-typed"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Type != "push" || m.SHA256 != rec.BodySHA256 {
		t.Fatalf("re-enqueued with type %q digest %q, want the record's %q %q", m.Type, m.SHA256, rec.EventType, rec.BodySHA256)
	}
	// The processor runs it once, under the record's route.
	var ran []string
	r := hookledger.NewRouter()
	for _, typ := range []string{"push", "release"} {
		r.HandleFunc("github", typ, func(ctx context.Context, ev *hookledger.Event) error { ran = append(ran, ev.Type); return nil })
	}
	p := &processor.Handler{Ledger: f.l, Routes: engine.MustRoutes(r)}
	if resp, _ := p.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", Body: msgs[0]}}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("processor failed the re-enqueued message: %v", resp.BatchItemFailures)
	}
	if len(ran) != 1 || ran[0] != "push" {
		t.Errorf("routes run %v, want push once", ran)
	}
}
