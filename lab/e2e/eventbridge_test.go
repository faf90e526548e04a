//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"github.com/hookledger/hookledger/internal/engine"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/sdkconfig"
	"github.com/hookledger/hookledger/lab/effect"
	"github.com/hookledger/hookledger/lab/providerstub"
	"github.com/hookledger/hookledger/ledger"
)

// busEnv is what lab/scripts/e2e.sh hands the EventBridge tests: the
// stand-in for Stripe's partner event bus (InboundEventBus), the forward
// bus and its consumer queue, and the bus door's queues.
type busEnv struct {
	*env
	inbound, forward   string
	forwarded          string // the consumer queue of the forward bus
	parked, intake     string // the bus door's dead-letter and intake queues
	eb                 *eventbridge.Client
	logs               *cloudwatchlogs.Client
	cw                 *cloudwatch.Client
	ddb                *dynamodb.Client
	stack, busLogGroup string
}

func busSetup(t *testing.T) *busEnv {
	t.Helper()
	e := setup(t)
	cfg, err := sdkconfig.Load(t.Context(), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	return &busEnv{env: e, inbound: must(t, "HOOKLEDGER_E2E_INBOUND_BUS"), forward: must(t, "HOOKLEDGER_E2E_FORWARD_BUS"),
		forwarded: must(t, "HOOKLEDGER_E2E_FORWARDED_URL"), parked: must(t, "HOOKLEDGER_E2E_BUS_DLQ_URL"), intake: must(t, "HOOKLEDGER_E2E_BUS_INTAKE_URL"),
		eb: eventbridge.NewFromConfig(cfg), logs: cloudwatchlogs.NewFromConfig(cfg), cw: cloudwatch.NewFromConfig(cfg),
		ddb: dynamodb.NewFromConfig(cfg), stack: must(t, "HOOKLEDGER_E2E_STACK"), busLogGroup: pairs(t, "HOOKLEDGER_E2E_LOG_GROUPS")["bus"]}
}

// put puts one event on the inbound bus, as Stripe's partner event source
// (or another producer) would, and returns the EventBridge id.
func (b *busEnv) put(t *testing.T, src, detailType string, detail []byte) string {
	t.Helper()
	out, err := b.eb.PutEvents(t.Context(), &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: &b.inbound, Source: &src, DetailType: &detailType, Detail: aws.String(string(detail))}}})
	if err != nil || out.FailedEntryCount != 0 {
		t.Fatalf("PutEvents on %s: %v %+v", b.inbound, err, out)
	}
	return aws.ToString(out.Entries[0].EventId)
}

// busID is the ledger identity of a Stripe event put on the stand-in bus:
// tenant platform, which has no HTTP door. A custom bus is not Stripe's
// partner event source, so acme, which signs deliveries, takes none of its
// events (docs/eventbridge.md, "Which doors share a record").
func (b *busEnv) busID(key string) ledger.Key {
	return ledger.Key{Source: "stripe", Tenant: "platform", ID: key}
}

// drained waits until the bus door's intake queue holds nothing, visible
// or in flight: every event put so far was taken, parked or handed back.
func (b *busEnv) drained(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(b.settle)
	for {
		v, f := b.depth(t, b.intake)
		if v+f == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the intake queue still holds %d visible and %d in-flight events after %v", v, f, b.settle)
		}
		time.Sleep(time.Second)
	}
}

func invoiceEvent(id, account string, amount int) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": "invoice.paid", "created": time.Now().Unix(), "livemode": false, "account": account,
		"data": map[string]any{"object": map[string]any{"id": "in_" + id, "object": "invoice", "amount_paid": amount, "currency": "eur", "customer": "cus_bus"}},
	})
	return b
}

// TestEventBridgeBusEventPutTwiceIsAppliedOnce: a Stripe snapshot event of
// a connected account, put on the bus, is charged once; the same
// event put again once its record is ten minutes old (beyond EventBridge's
// five-minute deduplication at publish; the record's age is set, not
// waited for) and with a new EventBridge id is a duplicate: nothing is
// enqueued, nothing charged, nothing parked.
func TestEventBridgeBusEventPutTwiceIsAppliedOnce(t *testing.T) {
	b := busSetup(t)
	key := "evt_bus_twice_" + b.runID
	detail := invoiceEvent(key, "acct_1E2EACME", 4100)
	first := b.put(t, "e2e.stripe", "invoice.paid", detail)
	id := b.busID(key)
	rec := b.waitStatus(t, b.settle, ledger.Done, id)[id]
	if !strings.HasPrefix(rec.BodySHA256, "bus:") {
		t.Errorf("the record's digest %q does not say it came from the bus", rec.BodySHA256)
	}
	// Ten minutes old: what the record would be had the second put come
	// ten minutes later.
	old := time.Now().Add(-10 * time.Minute)
	if _, err := b.ddb.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: &b.table,
		Key:              map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: id.PK()}, "sk": &ddbtypes.AttributeValueMemberS{Value: "r"}},
		UpdateExpression: aws.String("SET created_at = :c"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":c": &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(old.UnixMilli(), 10)}}}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := b.ledger.Get(t.Context(), id); time.Since(rec.CreatedAt) < 5*time.Minute {
		t.Fatalf("the record is %v old, not past EventBridge's five minutes", time.Since(rec.CreatedAt))
	}
	second := b.put(t, "e2e.stripe", "invoice.paid", detail)
	if first == second {
		t.Fatal("the second put has the first's EventBridge id")
	}
	b.drained(t)
	time.Sleep(3 * time.Second) // a processor run the duplicate might have caused
	again, _ := b.ledger.Get(t.Context(), id)
	if again.Status != ledger.Done || again.Attempts != rec.Attempts {
		t.Errorf("the repeat ran the event again: %+v", again)
	}
	if n := b.paymentStats(t).PerEvent[key]; n != 1 {
		t.Errorf("%s charged %d times, want once", key, n)
	}
	for _, p := range b.parkedNow(t) {
		if strings.Contains(p.body, key) {
			t.Errorf("the repeat was parked: %s", p.reason)
		}
	}
}

// TestEventBridgeThinEventIsFetchedAndAppliedOnce: a thin Stripe event of
// a connected account, put on the bus twice, is recorded once; the
// lab's effect fetches the meter from the Stripe stand-in (with the
// platform key, a secret under the prefix, and the event's context as
// Stripe-Context) and notifies once.
func TestEventBridgeThinEventIsFetchedAndAppliedOnce(t *testing.T) {
	b := busSetup(t)
	addr := must(t, "HOOKLEDGER_E2E_PROVIDERS_ADDR")
	stub := providerstub.New(providerstub.Options{})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the Stripe stand-in cannot listen on %s (the STRIPE_API_URL of the stack's EffectSettings): %v", addr, err)
	}
	srv := &http.Server{Handler: stub, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	meter := providerstub.RelatedObject{ID: "mtr_" + b.runID, Type: "billing.meter", Path: "/v1/billing/meters/mtr_" + b.runID}
	key, note, err := stub.Stripe.ThinEvent(effect.MeterErrorType, "acct_1E2EACME", meter,
		json.RawMessage(`{"id":"mtr_`+b.runID+`","object":"billing.meter","display_name":"API calls","status":"active"}`))
	if err != nil {
		t.Fatal(err)
	}
	b.put(t, "e2e.stripe", effect.MeterErrorType, note)
	b.put(t, "e2e.stripe", effect.MeterErrorType, note)
	id := b.busID(key)
	rec := b.waitStatus(t, b.settle, ledger.Done, id)[id]
	if rec.EventType != effect.MeterErrorType {
		t.Errorf("record type %q", rec.EventType)
	}
	b.drained(t)
	if n := b.paymentStats(t).Notified[key]; n != 1 {
		t.Errorf("thin event %s notified %d times, want once", key, n)
	}
	if n := stub.Stripe.Fetches(meter.Path); n < 1 {
		t.Errorf("the meter was never fetched from the stand-in")
	}
}

// forwardedEvent is an event on the forward bus as the consumer queue
// receives it.
type forwardedEvent struct {
	Source     string `json:"source"`
	DetailType string `json:"detail-type"`
	Detail     struct {
		Hookledger struct {
			Source, Tenant string
			EventID        string `json:"event_id"`
			Key            string `json:"key"`
		} `json:"hookledger"`
		Event json.RawMessage `json:"event"`
	} `json:"detail"`
}

// TestEventBridgeForwardedEventsReachTheBusOnce: customer.updated events,
// signed and posted to the HTTP door (each twice), are forwarded by the
// processor to the forward bus once each, carrying the ledger's key; a
// rule on that bus hands them to the consumer queue.
func TestEventBridgeForwardedEventsReachTheBusOnce(t *testing.T) {
	b := busSetup(t)
	const n = 5
	want := map[string]bool{}
	var ids []ledger.Key
	for i := range n {
		key := fmt.Sprintf("evt_fw_%s_%d", b.runID, i)
		body, _ := json.Marshal(map[string]any{"id": key, "object": "event", "type": "customer.updated", "created": time.Now().Unix(),
			"data": map[string]any{"object": map[string]any{"id": "cus_" + key, "object": "customer"}}})
		for range 2 {
			if a := b.post(t, "stripe", "acme", body, b.secret); a.code != http.StatusOK {
				t.Fatalf("POST %s: %+v", key, a)
			}
		}
		want[key] = true
		ids = append(ids, b.id(key))
	}
	b.waitStatus(t, b.settle, ledger.Done, ids...)
	got := map[string]int{}
	deadline := time.Now().Add(b.settle)
	for len(got) < n && time.Now().Before(deadline) {
		out, err := b.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &b.forwarded, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			var f forwardedEvent
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &f); err != nil {
				t.Fatalf("consumer got %s: %v", aws.ToString(m.Body), err)
			}
			b.sqs.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: &b.forwarded, ReceiptHandle: m.ReceiptHandle})
			h := f.Detail.Hookledger
			if !want[h.EventID] {
				continue // an earlier run's
			}
			got[h.EventID]++
			if f.Source != "hookledger.stripe" || f.DetailType != "customer.updated" || h.Tenant != "acme" ||
				h.Key != engine.DownstreamKey("stripe", "acme", h.EventID, "forward") || !strings.Contains(string(f.Detail.Event), h.EventID) {
				t.Errorf("forwarded %s", aws.ToString(m.Body))
			}
		}
	}
	time.Sleep(2 * time.Second) // a repeat would arrive now
	out, _ := b.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &b.forwarded, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	for _, m := range out.Messages {
		var f forwardedEvent
		json.Unmarshal([]byte(aws.ToString(m.Body)), &f)
		if want[f.Detail.Hookledger.EventID] {
			got[f.Detail.Hookledger.EventID]++
		}
	}
	for key := range want {
		if got[key] != 1 {
			t.Errorf("%s reached the forward bus %d times, want once", key, got[key])
		}
	}
}

type parkedEvent struct{ body, reason string }

// parkedNow reads (and leaves) what the bus door's dead-letter queue holds.
func (b *busEnv) parkedNow(t *testing.T) []parkedEvent {
	t.Helper()
	var out []parkedEvent
	for range 3 {
		got, err := b.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &b.parked, MaxNumberOfMessages: 10,
			MessageAttributeNames: []string{"All"}, VisibilityTimeout: 1, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range got.Messages {
			p := parkedEvent{body: aws.ToString(m.Body)}
			if a, ok := m.MessageAttributes["hookledger-parked"]; ok {
				p.reason = aws.ToString(a.StringValue)
			}
			out = append(out, p)
		}
	}
	return out
}

// TestEventBridgeUnusableEventIsParkedCountedAlarmed: an orders event
// without its key_path and an event of an EventBridge source no source
// takes are parked on the bus door's dead-letter queue, unchanged, with
// their reasons; the bus function counted them (BusParked in its metric
// lines), and BusParkedAlarm, fed those lines as CloudWatch would (the
// emulator does not read metric lines from logs), goes to ALARM.
func TestEventBridgeUnusableEventIsParkedCountedAlarmed(t *testing.T) {
	b := busSetup(t)
	noKey := []byte(`{"total":5,"marker":"nokey-` + b.runID + `"}`)
	unknown := []byte(`{"order_id":"o-1","marker":"unknown-` + b.runID + `"}`)
	b.put(t, "e2e.orders", "OrderPlaced", noKey)
	b.put(t, "e2e.unknown", "OrderPlaced", unknown)
	b.drained(t)
	reasons := map[string]string{}
	for _, p := range b.parkedNow(t) {
		switch {
		case strings.Contains(p.body, "nokey-"+b.runID):
			reasons["no key"] = p.reason
		case strings.Contains(p.body, "unknown-"+b.runID):
			reasons["unknown"] = p.reason
		}
	}
	if !strings.Contains(reasons["no key"], "no usable key") || !strings.Contains(reasons["unknown"], `"e2e.unknown"`) {
		t.Fatalf("parked with reasons %q", reasons)
	}
	// Counted: the bus function's metric lines, in its log group.
	deadline := time.Now().Add(30 * time.Second)
	parked := 0
	for parked < 2 && time.Now().Before(deadline) {
		parked = 0
		var token *string
		for {
			out, err := b.logs.FilterLogEvents(t.Context(), &cloudwatchlogs.FilterLogEventsInput{LogGroupName: &b.busLogGroup, NextToken: token})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range out.Events {
				if strings.Contains(aws.ToString(ev.Message), `"BusParked":1`) {
					parked++
				}
			}
			if token = out.NextToken; token == nil {
				break
			}
		}
		time.Sleep(time.Second)
	}
	if parked < 2 {
		t.Fatalf("%d BusParked metric lines in %s, want at least 2", parked, b.busLogGroup)
	}
	// Alarmed: the stack's alarm on those counts.
	alarms, err := b.cw.DescribeAlarms(t.Context(), &cloudwatch.DescribeAlarmsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var alarm *cwtypes.MetricAlarm
	for i, a := range alarms.MetricAlarms {
		if aws.ToString(a.MetricName) == "BusParked" && strings.Contains(aws.ToString(a.AlarmName), b.stack) {
			alarm = &alarms.MetricAlarms[i]
		}
	}
	if alarm == nil {
		t.Fatal("no BusParked alarm deployed")
	}
	if _, err := b.cw.PutMetricData(t.Context(), &cloudwatch.PutMetricDataInput{Namespace: alarm.Namespace, MetricData: []cwtypes.MetricDatum{{
		MetricName: aws.String("BusParked"), Value: aws.Float64(float64(parked)), Unit: cwtypes.StandardUnitCount,
		Dimensions: alarm.Dimensions, Timestamp: aws.Time(time.Now())}}}); err != nil {
		t.Fatal(err)
	}
	now, err := b.cw.DescribeAlarms(t.Context(), &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{aws.ToString(alarm.AlarmName)}})
	if err != nil || len(now.MetricAlarms) != 1 || now.MetricAlarms[0].StateValue != cwtypes.StateValueAlarm {
		t.Errorf("BusParkedAlarm after the parked counts: %+v %v", now.MetricAlarms, err)
	}
}
