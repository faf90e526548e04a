package bus_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/bus"
	"github.com/hookledger/hookledger/internal/fakeclock"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

const stripeSecret = "whsec_test_bus_acme"

// stripeBus is the EventBridge source of Stripe's partner event source in
// the tests (EventBridge refuses it in a PutEvents entry; Stripe alone
// writes it, so the tests hand its envelopes to the door directly).
const stripeBus = source.StripePartnerSource + "ed_test"

// sources is the sources JSON of the tests: a Stripe source with both
// doors (acme signs deliveries and owns a connected account; platform takes
// every other bus event), a Stripe source whose events anyone may put on a
// custom bus (its tenant has no HTTP door), an eventbridge source keyed on
// a detail field, and one keyed on the EventBridge event id whose tenant is
// an AWS account.
const sources = `{
  "stripe": {"provider": "stripe", "bus_sources": ["` + stripeBus + `"],
    "tenants": {"acme": {"secrets": ["literal:` + stripeSecret + `"], "accounts": ["acct_1ACME"]},
                "platform": {"accounts": ["*"]}}},
  "relay": {"provider": "stripe", "bus_sources": ["stripe.test"],
    "tenants": {"relayed": {"accounts": ["*"]}}},
  "orders": {"provider": "eventbridge", "bus_sources": ["com.example.orders"], "key_path": "order_id",
    "tenants": {"shop": {"accounts": ["*"]}}},
  "audit": {"provider": "eventbridge", "bus_sources": ["com.example.audit"],
    "tenants": {"main": {"accounts": ["111122223333"]}}}
}`

type fixture struct {
	h      *bus.Handler
	rcv    *receiver.Handler
	l      *ledger.Ledger
	clock  *fakeclock.Clock
	sqs    *sqs.Client
	queue  string // the processing queue
	parked string // the bus's dead-letter queue
	emf    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), `"`+name+`":1`)
}

func setup(t *testing.T) fixture {
	t.Helper()
	cfg := awstest.Config(t)
	table := awstest.Table(t, cfg)
	qurl, _ := awstest.Queues(t, cfg, queue.QueueSpec{})
	_, parked := awstest.Queues(t, cfg, queue.QueueSpec{})
	c := fakeclock.New(time.Now().UTC())
	parsed, err := source.Parse([]byte(sources))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := source.NewRegistry(parsed, &source.Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: table, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	sq := sqs.NewFromConfig(cfg)
	emf := &syncBuffer{}
	m := metric.New(emf, "test")
	rcv := &receiver.Handler{Sources: reg, Ledger: l, Queue: &queue.Sender{API: sq, URL: qurl}, Now: c.Now, Metrics: m}
	h := &bus.Handler{Sources: reg, Claim: rcv, Park: &bus.Parking{API: sq, URL: parked}, Retention: ledger.DefaultRetention,
		Now: c.Now, Metrics: m, Log: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))}
	return fixture{h: h, rcv: rcv, l: l, clock: c, sqs: sq, queue: qurl, parked: parked, emf: emf}
}

// envelope is an event as an EventBridge rule hands it to its SQS target.
func envelope(id, src, detailType, account string, at time.Time, detail string) string {
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": id, "detail-type": detailType, "source": src, "account": account,
		"time": at.UTC().Format(time.RFC3339), "region": "us-east-1", "resources": []string{}, "detail": json.RawMessage(detail),
	})
	return string(b)
}

func snapshot(id, account string) string {
	acct := ""
	if account != "" {
		acct = `,"account":"` + account + `"`
	}
	return `{"id":"` + id + `","object":"event","type":"invoice.paid"` + acct + `,"data":{"object":{"id":"in_1","amount_paid":4900,"currency":"usd"}}}`
}

func thin(id, context string) string {
	ctx := ""
	if context != "" {
		ctx = `,"context":"` + context + `"`
	}
	return `{"id":"` + id + `","object":"v2.core.event","type":"v1.billing.meter.no_meter_found","created":"2026-01-01T00:00:00.000Z","livemode":false` + ctx +
		`,"related_object":{"id":"mtr_1","type":"billing.meter","url":"/v1/billing/meters/mtr_1"}}`
}

// handle runs one batch of intake messages and returns the ids handed back.
func (f fixture) handle(t *testing.T, bodies ...string) []string {
	t.Helper()
	var batch events.SQSEvent
	for i, b := range bodies {
		batch.Records = append(batch.Records, events.SQSMessage{MessageId: string(rune('a' + i)), Body: b})
	}
	resp, err := f.h.Handle(t.Context(), batch)
	if err != nil {
		t.Fatal(err)
	}
	var back []string
	for _, it := range resp.BatchItemFailures {
		back = append(back, it.ItemIdentifier)
	}
	return back
}

func (f fixture) record(t *testing.T, src, tenant, key string) ledger.Record {
	t.Helper()
	rec, err := f.l.Get(t.Context(), ledger.Key{Source: src, Tenant: tenant, ID: key})
	if err != nil {
		t.Fatalf("record %s/%s/%s: %v", src, tenant, key, err)
	}
	return rec
}

func (f fixture) messages(t *testing.T) []queue.Message {
	t.Helper()
	var out []queue.Message
	for _, b := range awstest.Drain(t, f.sqs, f.queue) {
		m, err := queue.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

type parkedMessage struct{ body, reason, source string }

func (f fixture) parkedMessages(t *testing.T) []parkedMessage {
	t.Helper()
	ctx := context.Background()
	var out []parkedMessage
	for empty := 0; empty < 2; {
		got, err := f.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &f.parked, MaxNumberOfMessages: 10,
			MessageAttributeNames: []string{"All"}, VisibilityTimeout: 30})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range got.Messages {
			p := parkedMessage{body: aws.ToString(m.Body)}
			if a, ok := m.MessageAttributes[bus.AttrReason]; ok {
				p.reason = aws.ToString(a.StringValue)
			}
			if a, ok := m.MessageAttributes[bus.AttrSource]; ok {
				p.source = aws.ToString(a.StringValue)
			}
			out = append(out, p)
			f.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &f.parked, ReceiptHandle: m.ReceiptHandle})
		}
	}
	return out
}

// An event put on the bus twice, ten minutes apart (twice EventBridge's
// five-minute window of deduplication at publish), each time with a new
// EventBridge id as a second PutEvents gets, is recorded and enqueued once:
// the ledger keys on Stripe's event id, for the source's whole retention.
func TestBusEventPutTwiceMinutesApartIsClaimedOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	first := f.clock.Now()
	detail := snapshot("evt_bus_twice", "acct_1ACME")
	if back := f.handle(t, envelope("eb-1", stripeBus, "invoice.paid", "123456789012", first, detail)); len(back) != 0 {
		t.Fatalf("handed back %v", back)
	}
	rec := f.record(t, "stripe", "acme", "evt_bus_twice")
	if rec.EventType != "invoice.paid" || rec.Status != ledger.Received || !strings.HasPrefix(rec.BodySHA256, receiver.BusDigestPrefix) {
		t.Fatalf("record %+v", rec)
	}
	msgs := f.messages(t)
	if len(msgs) != 1 || msgs[0].Tenant != "acme" || msgs[0].ID != "evt_bus_twice" {
		t.Fatalf("messages %+v", msgs)
	}
	var compact bytes.Buffer
	json.Compact(&compact, []byte(detail))
	if !bytes.Equal(msgs[0].Body, compact.Bytes()) {
		t.Errorf("the event's body is the detail: got %s", msgs[0].Body)
	}
	if _, err := f.l.Complete(t.Context(), mustClaim(t, f, rec)); err != nil {
		t.Fatal(err)
	}

	f.clock.Advance(10 * time.Minute)
	if age := f.clock.Now().Sub(rec.CreatedAt); age < 5*time.Minute {
		t.Fatalf("the second put is only %v after the first", age)
	}
	// The same event again, as EventBridge hands it over the second time:
	// a new EventBridge id, and the detail as another serializer wrote it.
	again := strings.ReplaceAll(detail, `,"`, `, "`)
	if back := f.handle(t, envelope("eb-2", stripeBus, "invoice.paid", "123456789012", f.clock.Now(), again)); len(back) != 0 {
		t.Fatalf("handed back %v", back)
	}
	if msgs := f.messages(t); len(msgs) != 0 {
		t.Errorf("the repeat was enqueued: %+v", msgs)
	}
	// Taking an event and knowing it again write no metric.
	if f.emf.count("BusDuplicate") != 0 || f.emf.count("BusAccepted") != 0 || f.emf.count("BusReceived") != 0 || f.emf.count("BodyMismatch") != 0 {
		t.Errorf("metrics: %d received, %d accepted, %d duplicate, %d mismatch", f.emf.count("BusReceived"), f.emf.count("BusAccepted"), f.emf.count("BusDuplicate"), f.emf.count("BodyMismatch"))
	}
}

func mustClaim(t *testing.T, f fixture, rec ledger.Record) ledger.Lease {
	t.Helper()
	lease, err := f.l.ClaimEvent(t.Context(), ledger.Key{Source: rec.Source, Tenant: rec.Tenant, ID: rec.ID}, time.Minute, rec.Identity())
	if err != nil {
		t.Fatal(err)
	}
	return lease
}

// Tenants come from the account an event is from: a snapshot event's
// account, a thin event's context, the AWS account for an eventbridge
// source; an event no tenant takes is parked, not given to another.
func TestBusTenantComesFromTheAccount(t *testing.T) {
	t.Parallel()
	f := setup(t)
	now := f.clock.Now()
	back := f.handle(t,
		envelope("eb-1", stripeBus, "v1.billing.meter.no_meter_found", "123456789012", now, thin("evt_thin_acme", "acct_1ACME")),
		envelope("eb-2", stripeBus, "v1.billing.meter.no_meter_found", "123456789012", now, thin("evt_thin_own", "")),
		envelope("eb-3", stripeBus, "invoice.paid", "123456789012", now, snapshot("evt_snap_other", "acct_9OTHER")),
		envelope("eb-4", "com.example.audit", "UserDeleted", "111122223333", now, `{"user":"u-1"}`),
		envelope("eb-5", "com.example.audit", "UserDeleted", "999988887777", now, `{"user":"u-2"}`),
	)
	if len(back) != 0 {
		t.Fatalf("handed back %v", back)
	}
	for _, want := range []struct{ src, tenant, key, typ string }{
		{"stripe", "acme", "evt_thin_acme", "v1.billing.meter.no_meter_found"},
		{"stripe", "platform", "evt_thin_own", "v1.billing.meter.no_meter_found"},
		{"stripe", "platform", "evt_snap_other", "invoice.paid"},
		// No key_path: the EventBridge event id is the key, the
		// detail-type the type.
		{"audit", "main", "eb-4", "UserDeleted"},
	} {
		if rec := f.record(t, want.src, want.tenant, want.key); rec.EventType != want.typ {
			t.Errorf("%+v: type %q", want, rec.EventType)
		}
	}
	parked := f.parkedMessages(t)
	if len(parked) != 1 || !strings.Contains(parked[0].reason, "no tenant lists account 999988887777") || parked[0].source != "audit" {
		t.Fatalf("parked %+v", parked)
	}
	if f.emf.count("BusParked") != 1 {
		t.Errorf("BusParked counted %d times", f.emf.count("BusParked"))
	}
}

// Whatever cannot become a ledger event is parked with its reason, the
// message unchanged, counted; nothing is written to the ledger or the
// processing queue.
func TestBusParksWhatItCannotTake(t *testing.T) {
	t.Parallel()
	f := setup(t)
	now := f.clock.Now()
	cases := []struct{ body, reason string }{
		{`not json`, "not an EventBridge event"},
		{`{"id":"x","source":"stripe.test"}`, "no source, id or detail"},
		{envelope("eb-1", "com.example.unknown", "X", "1", now, `{}`), `no source takes events from this EventBridge source "com.example.unknown"`},
		{envelope("eb-2", stripeBus, "invoice.paid", "1", now, `[1,2]`), "detail is not a JSON object"},
		{envelope("eb-3", stripeBus, "invoice.paid", "1", now, `{"object":"event","type":"invoice.paid"}`), "no usable key"},
		{envelope("eb-4", stripeBus, "invoice.paid", "1", now, `{"id":42,"type":"invoice.paid"}`), "no usable key"},
		{envelope("eb-5", "com.example.orders", "OrderPlaced", "1", now, `{"total":5}`), "no usable key"},
		{envelope("eb-6", stripeBus, "invoice.paid", "1", now, `{"id":"evt_\ufffd","type":"invoice.paid"}`), "characters the pipeline cannot carry"},
		{envelope("eb-7", stripeBus, "invoice.paid", "1", now.Add(-30*24*time.Hour), snapshot("evt_old", "")), "longer than source \"stripe\"'s records live"},
		{envelope("eb-8", stripeBus, "invoice.paid", "1", now, `{"id":"evt_two","type":"invoice.paid","account":"acct_1ACME","context":"acct_2B"}`), "names two accounts"},
		{envelope("eb-9", stripeBus, "invoice.paid", "1", now.Add(10*365*24*time.Hour), snapshot("evt_ahead", "")), "ahead of this clock, more than 15m0s"},
		{strings.Replace(envelope("eb-10", stripeBus, "invoice.paid", "1", now, snapshot("evt_untimed", "")), `"time":"`+now.UTC().Format(time.RFC3339)+`",`, "", 1), "the event has no time"},
	}
	var bodies []string
	for _, c := range cases {
		bodies = append(bodies, c.body)
	}
	if back := f.handle(t, bodies...); len(back) != 0 {
		t.Fatalf("handed back %v", back)
	}
	parked := f.parkedMessages(t)
	if len(parked) != len(cases) {
		t.Fatalf("%d parked, want %d: %+v", len(parked), len(cases), parked)
	}
	for _, c := range cases {
		found := false
		for _, p := range parked {
			if p.body == c.body {
				found = true
				if !strings.Contains(p.reason, c.reason) {
					t.Errorf("%.60s: reason %q, want one mentioning %q", c.body, p.reason, c.reason)
				}
			}
		}
		if !found {
			t.Errorf("%.60s was not parked as it came", c.body)
		}
	}
	if msgs := f.messages(t); len(msgs) != 0 {
		t.Errorf("enqueued %+v", msgs)
	}
	if n := f.emf.count("BusParked"); n != len(cases) {
		t.Errorf("BusParked counted %d times, want %d", n, len(cases))
	}
}

// An event whose time is a little ahead of the door's clock (a producer's
// clock off by less than bus.MaxAhead) is taken.
func TestBusTakesAnEventALittleAhead(t *testing.T) {
	t.Parallel()
	f := setup(t)
	at := f.clock.Now().Add(bus.MaxAhead - time.Minute)
	if back := f.handle(t, envelope("eb-1", stripeBus, "invoice.paid", "1", at, snapshot("evt_ahead_a_little", ""))); len(back) != 0 {
		t.Fatalf("handed back %v", back)
	}
	f.record(t, "stripe", "platform", "evt_ahead_a_little")
	if p := f.parkedMessages(t); len(p) != 0 {
		t.Errorf("parked %+v", p)
	}
}

// A ledger outage fails the message so the intake queue hands it back, as a
// 503 makes an HTTP sender retry; nothing is parked.
func TestBusHandsBackWhenTheLedgerIsDown(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cfg := awstest.Config(t)
	gone, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: awstest.Name("hl-missing"), Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	f.rcv.Ledger = gone
	back := f.handle(t, envelope("eb-1", stripeBus, "invoice.paid", "1", f.clock.Now(), snapshot("evt_outage", "")))
	if len(back) != 1 || back[0] != "a" {
		t.Fatalf("handed back %v, want the message", back)
	}
	if p := f.parkedMessages(t); len(p) != 0 {
		t.Errorf("parked %+v", p)
	}
	if f.emf.count("BusRetried") != 1 {
		t.Error("BusRetried not counted")
	}
}

// An event that should be parked but cannot be (the dead-letter queue is
// unreachable) is handed back, never dropped.
func TestBusHandsBackWhatItCannotPark(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.h.Park = &bus.Parking{API: f.sqs, URL: f.parked + "-gone"}
	if back := f.handle(t, `not json`); len(back) != 1 {
		t.Fatalf("handed back %v, want the message", back)
	}
}

// A source with both doors applies an event once, whichever door brings it
// first: the second is a duplicate, not a body reused under its key (the
// two doors' bytes differ by nature).
func TestBothDoorsClaimAnEventOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	post := func(id string) receiver.Result { return f.post(t, snapshot(id, "acct_1ACME")) }
	put := func(id string) {
		if back := f.handle(t, envelope("eb-"+id, stripeBus, "invoice.paid", "1", f.clock.Now(), snapshot(id, "acct_1ACME"))); len(back) != 0 {
			t.Fatalf("handed back %v", back)
		}
	}
	if r := post("evt_http_first"); r != receiver.Accepted {
		t.Fatalf("HTTP: %s", r)
	}
	put("evt_http_first")
	put("evt_bus_first")
	f.clock.Advance(time.Minute)
	if r := post("evt_bus_first"); r != receiver.Duplicate {
		t.Fatalf("HTTP after the bus: %s, want duplicate", r)
	}
	if msgs := f.messages(t); len(msgs) != 2 {
		t.Errorf("%d messages, want one per event: %+v", len(msgs), msgs)
	}
	if f.emf.count("BodyMismatch") != 0 {
		t.Error("a delivery through the other door was counted as a body reused under its key")
	}
	if f.record(t, "stripe", "acme", "evt_http_first").BodySHA256 == "" {
		t.Error("no digest")
	}
}

// post delivers body, signed for acme, to the HTTP door.
func (f fixture) post(t *testing.T, body string) receiver.Result {
	t.Helper()
	sv, _ := webhook.New(webhook.Config{Provider: "stripe"})
	hdr, err := sv.Sign(webhook.Message{Body: []byte(body), Now: f.clock.Now()}, stripeSecret)
	if err != nil {
		t.Fatal(err)
	}
	req := events.APIGatewayV2HTTPRequest{RawPath: "/webhooks/stripe/acme", Body: body, Headers: map[string]string{},
		PathParameters: map[string]string{"source": "stripe", "tenant": "acme"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost}}}
	for k := range hdr {
		req.Headers[strings.ToLower(k)] = hdr.Get(k)
	}
	resp, _ := f.rcv.Handle(t.Context(), req)
	return receiver.Result(resp.Headers["X-Hookledger-Result"])
}

// refunded is snapshot's event with another type.
func refunded(id, account string) string {
	return strings.Replace(snapshot(id, account), `"invoice.paid"`, `"charge.refunded"`, 1)
}

// A key that holds another event raises the mismatch alarm whichever door
// brings the second: a signed delivery whose id Stripe's partner bus
// recorded with another type, a bus event whose id a signed delivery
// recorded with another type, a bus event with another body. Nothing of
// the second is written or enqueued; under reject the signed one gets 409.
func TestAnotherEventUnderAKeyIsAMismatchWhicheverDoor(t *testing.T) {
	t.Parallel()
	f := setup(t)
	now := f.clock.Now()
	put := func(id, detailType, detail string) {
		t.Helper()
		if back := f.handle(t, envelope("eb-"+id+detailType, stripeBus, detailType, "1", now, detail)); len(back) != 0 {
			t.Fatalf("handed back %v", back)
		}
	}
	put("evt_bus_then_signed", "invoice.paid", snapshot("evt_bus_then_signed", "acct_1ACME"))
	if r := f.post(t, refunded("evt_bus_then_signed", "acct_1ACME")); r != receiver.Mismatched {
		t.Errorf("signed delivery of another type after the bus: %s, want %s", r, receiver.Mismatched)
	}
	if r := f.post(t, snapshot("evt_signed_then_bus", "acct_1ACME")); r != receiver.Accepted {
		t.Fatalf("signed: %s", r)
	}
	put("evt_signed_then_bus", "charge.refunded", refunded("evt_signed_then_bus", "acct_1ACME"))
	put("evt_bus_twice", "invoice.paid", snapshot("evt_bus_twice", "acct_1ACME"))
	put("evt_bus_twice", "invoice.paid", strings.Replace(snapshot("evt_bus_twice", "acct_1ACME"), "4900", "1", 1))
	if n, m := f.emf.count("BodyMismatch"), f.emf.count("NeedsOperator"); n != 3 || m != 3 {
		t.Errorf("BodyMismatch counted %d times, NeedsOperator %d, want 3 each", n, m)
	}
	for _, key := range []string{"evt_bus_then_signed", "evt_signed_then_bus", "evt_bus_twice"} {
		if rec := f.record(t, "stripe", "acme", key); rec.EventType != "invoice.paid" {
			t.Errorf("%s: the record's type became %q", key, rec.EventType)
		}
	}
	if msgs := f.messages(t); len(msgs) != 3 {
		t.Errorf("%d messages, want one per event: %+v", len(msgs), msgs)
	}
	if p := f.parkedMessages(t); len(p) != 0 {
		t.Errorf("parked %+v", p)
	}
	f.rcv.Mismatch = receiver.MismatchReject
	if r := f.post(t, refunded("evt_bus_then_signed", "acct_1ACME")); r != receiver.Conflict {
		t.Errorf("under reject: %s, want %s", r, receiver.Conflict)
	}
}

// A Stripe-shaped event that anyone allowed to put events on a custom bus
// could have put cannot take a signed event's id: a source whose tenant
// signs is refused such a bus source, and the source that takes it gives
// its events to a tenant without an HTTP door, so the signed delivery of
// the same id is a new event.
func TestCustomBusEventCannotTakeASignedEventsID(t *testing.T) {
	t.Parallel()
	f := setup(t)
	shared := strings.Replace(sources, stripeBus, "stripe.custom", 1)
	parsed, err := source.Parse([]byte(shared))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := source.NewRegistry(parsed, &source.Secrets{}); err == nil || !strings.Contains(err.Error(), "is not Stripe's partner event source") {
		t.Errorf("a signing tenant taking events of a custom bus source: %v", err)
	}
	if back := f.handle(t, envelope("eb-1", "stripe.test", "charge.refunded", "1", f.clock.Now(), refunded("evt_taken_over", "acct_1ACME"))); len(back) != 0 {
		t.Fatalf("handed back %v", back)
	}
	if r := f.post(t, snapshot("evt_taken_over", "acct_1ACME")); r != receiver.Accepted {
		t.Errorf("the signed delivery after a custom bus event of its id: %s, want accepted", r)
	}
	if rec := f.record(t, "stripe", "acme", "evt_taken_over"); rec.EventType != "invoice.paid" || strings.HasPrefix(rec.BodySHA256, receiver.BusDigestPrefix) {
		t.Errorf("the signed event's record %+v", rec)
	}
}

// An event put on a bus reaches the bus door as the bus's rule delivers
// it to the intake queue (the emulator's EventBridge, envelope and all),
// and is claimed.
func TestBusTakesWhatARuleDelivers(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cfg := awstest.Config(t)
	eb := eventbridge.NewFromConfig(cfg)
	name := awstest.Name("hl-in")
	if _, err := eb.CreateEventBus(t.Context(), &eventbridge.CreateEventBusInput{Name: &name}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eb.DeleteEventBus(context.Background(), &eventbridge.DeleteEventBusInput{Name: &name}) })
	intake, _ := awstest.Queues(t, cfg, queue.QueueSpec{})
	attrs, err := f.sqs.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: &intake, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	rule := "bus-door"
	if _, err := eb.PutRule(t.Context(), &eventbridge.PutRuleInput{Name: &rule, EventBusName: &name, EventPattern: aws.String(`{"source":[{"prefix":""}]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := eb.PutTargets(t.Context(), &eventbridge.PutTargetsInput{Rule: &rule, EventBusName: &name,
		Targets: []ebtypes.Target{{Id: aws.String("intake"), Arn: aws.String(attrs.Attributes["QueueArn"])}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := eb.PutEvents(t.Context(), &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: &name, Source: aws.String("stripe.test"), DetailType: aws.String("invoice.paid"), Detail: aws.String(snapshot("evt_via_rule", "acct_1ACME"))}}}); err != nil {
		t.Fatal(err)
	}
	var batch events.SQSEvent
	for _, b := range awstest.Drain(t, f.sqs, intake) {
		batch.Records = append(batch.Records, events.SQSMessage{MessageId: "m", Body: b})
	}
	if len(batch.Records) != 1 {
		t.Fatalf("%d events on the intake queue, want 1", len(batch.Records))
	}
	resp, err := f.h.Handle(t.Context(), batch)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%+v %v", resp, err)
	}
	if rec := f.record(t, "relay", "relayed", "evt_via_rule"); rec.EventType != "invoice.paid" {
		t.Errorf("record %+v", rec)
	}
	if p := f.parkedMessages(t); len(p) != 0 {
		t.Errorf("parked %+v", p)
	}
}
