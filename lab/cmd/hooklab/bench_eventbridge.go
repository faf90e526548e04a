package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hookledger/hookledger/internal/engine"
	"math"
	"sort"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/bus"
	"github.com/hookledger/hookledger/internal/forward"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/internal/testbody"
	"github.com/hookledger/hookledger/lab/bench"
	"github.com/hookledger/hookledger/ledger"
)

// eventbridgeEvents is how many events each measurement of the
// EventBridge section runs.
const eventbridgeEvents = 50

// eventbridge measures the EventBridge doors against the emulator: what the
// forward step adds to the processor (requests, write units, time), and
// what an event costs through the bus door next to the HTTP door, and
// prices both per million events.
func (b *benchRun) eventbridge(ctx context.Context) error {
	env, cleanup, err := b.newEnv(ctx, "eventbridge", "")
	if err != nil {
		return err
	}
	defer cleanup()
	m, acc, cfg, err := b.metered(ctx, env)
	if err != nil {
		return err
	}
	eb := eventbridge.NewFromConfig(cfg)
	busName := "bench-out-" + env.table
	if _, err := eventbridge.NewFromConfig(env.raw).CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: &busName}); err != nil {
		return err
	}
	defer eventbridge.NewFromConfig(env.raw).DeleteEventBus(context.Background(), &eventbridge.DeleteEventBusInput{Name: &busName})
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), env.conf.LedgerOptions())
	if err != nil {
		return err
	}
	plain, err := ledger.New(dynamodb.NewFromConfig(env.raw), env.conf.LedgerOptions())
	if err != nil {
		return err
	}
	body := testbody.JSON("evt_bench_template", 3<<10)

	// The forward step: the same processor, with and without it.
	routes := hookledger.NewRouter()
	routes.HandleFunc("stripe", "none", func(context.Context, *hookledger.Event) error { return nil })
	routes.Handle("stripe", "forward", hookledger.ForwardEvents)
	routes.HandleFunc("stripe", "charge_forward", func(ctx context.Context, ev *hookledger.Event) error {
		if _, err := ev.Step(ctx, "charge", func(context.Context, string) (string, error) { return "ch_0123456789", nil }); err != nil {
			return err
		}
		return ev.Forward(ctx, nil)
	})
	proc := &processor.Handler{Ledger: l, Routes: engine.MustRoutes(routes), Log: discardLog(), Forward: &forward.Publisher{API: eb, Bus: busName}}
	type row struct {
		ms             []float64
		calls          map[string]int
		wcu, index, eb float64
	}
	measure := func(typ string) (row, error) {
		r := row{calls: map[string]int{}}
		for i := range eventbridgeEvents {
			id := ledger.Key{Source: "stripe", Tenant: "acme", ID: fmt.Sprintf("evt_fw_%s_%d", typ, i)}
			if _, _, err := plain.Create(ctx, ledger.NewEvent{Key: id, Type: typ, BodySHA256: "x"}); err != nil {
				return r, err
			}
			msg, err := queue.Encode(queue.Message{Source: id.Source, Tenant: id.Tenant, ID: id.ID, Type: typ, SHA256: "x", Body: body})
			if err != nil {
				return r, err
			}
			m.Reset()
			acc.Take()
			start := time.Now()
			resp, _ := proc.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", Body: msg}}})
			r.ms = append(r.ms, float64(time.Since(start).Microseconds())/1000)
			if len(resp.BatchItemFailures) > 0 {
				return r, fmt.Errorf("the processor failed a %s event", typ)
			}
			for k, v := range m.Snapshot() {
				r.calls[k] += v
			}
			u := acc.Take()
			r.wcu += u.WCU
			r.index += u.IndexWCU
		}
		n := float64(eventbridgeEvents)
		r.wcu, r.index = r.wcu/n, r.index/n
		r.eb = float64(r.calls["EventBridge.PutEvents"]) / n * math.Ceil(float64(len(body)+400)/bench.EventBridgeChunk)
		return r, nil
	}
	rows := map[string]row{}
	for _, typ := range []string{"none", "forward", "charge_forward"} {
		if rows[typ], err = measure(typ); err != nil {
			return err
		}
	}
	per := func(r row, call string) string {
		return fmt.Sprintf("%.2f", float64(r.calls[call])/eventbridgeEvents)
	}
	t := &bench.MD{Title: fmt.Sprintf("Forward step: what forwarding adds per event (3 KB events, %d each, measured against the emulator)", eventbridgeEvents),
		Header: []string{"handler", "PutEvents", "UpdateItem", "WCU table", "WCU index", "processor ms (median)", "added per 1M events"}}
	base := rows["none"]
	baseMS := median(base.ms)
	for _, c := range []struct{ typ, label string }{{"none", "no effect (the baseline)"}, {"forward", "ForwardEvents (forward is the only step)"},
		{"charge_forward", "a step, then Forward (forward is a further step)"}} {
		r := rows[c.typ]
		added := 0.0
		if c.typ != "none" {
			added = bench.DoorCost(bench.DoorProfile{LambdaMS: math.Max(0, median(r.ms)-baseMS), WCU: r.wcu + r.index - base.wcu - base.index, Events: r.eb}, b.processorMB())
		}
		t.Add(c.label, per(r, "EventBridge.PutEvents"), per(r, "DynamoDB.UpdateItem"), r.wcu, r.index, fmt.Sprintf("%.1f", median(r.ms)), usd(added))
	}
	t.Notes = []string{
		"Added per million events: the EventBridge events put (" + bench.PriceEventBridge.Source + ": $1.00 per million, each 64 KB one event), " +
			"the write units above the baseline, and the processor's extra time (a local proxy for the PutEvents round trip) at the bench's memory size. " +
			"Forward as the only step rides on Complete (no extra write); as a further step it costs the one UpdateItem of 1 WCU every further step costs. " +
			"Delivery from the bus to a consumer's SQS queue or function in the same account is not charged by EventBridge; the consumer pays for its own queue.",
	}
	t.Print(b.out)

	// The bus door next to the HTTP door: one event each, claimed,
	// recorded and enqueued by the same code.
	// Stripe's partner event source: acme signs deliveries too, so its bus events may come from Stripe only.
	partner := source.StripePartnerSource + "ed_bench"
	srcs, err := source.Parse([]byte(fmt.Sprintf(`{"stripe":{"provider":"stripe","bus_sources":[%q],"tenants":{"acme":{"secrets":[%q],"accounts":["*"]}}}}`, partner, "literal:"+benchSecret)))
	if err != nil {
		return err
	}
	reg, err := source.NewRegistry(srcs, &source.Secrets{})
	if err != nil {
		return err
	}
	sq := sqs.NewFromConfig(cfg)
	rcv := &receiver.Handler{Sources: reg, Ledger: l, Queue: &queue.Sender{API: sq, URL: env.queueURL}, Payload: env.conf.Payload, Log: discardLog()}
	door := &bus.Handler{Sources: reg, Claim: rcv, Park: &bus.Parking{API: sq, URL: env.dlqURL}, Retention: env.conf.Retention, Log: discardLog()}
	const batch = 10
	var busMS, httpMS []float64
	busCalls, httpCalls := map[string]int{}, map[string]int{}
	var busWCU, httpWCU float64
	for i := 0; i < eventbridgeEvents; i += batch {
		var recs []events.SQSMessage
		for j := range batch {
			key := fmt.Sprintf("evt_door_bus_%d", i+j)
			envelope, _ := json.Marshal(map[string]any{"version": "0", "id": fmt.Sprintf("eb-%d", i+j), "detail-type": "invoice.paid", "source": partner,
				"account": "123456789012", "time": time.Now().UTC().Format(time.RFC3339), "region": "us-east-1", "resources": []string{},
				"detail": json.RawMessage(testbody.JSON(key, 3<<10))})
			recs = append(recs, events.SQSMessage{MessageId: fmt.Sprint(j), Body: string(envelope)})
		}
		m.Reset()
		acc.Take()
		start := time.Now()
		resp, _ := door.Handle(ctx, events.SQSEvent{Records: recs})
		busMS = append(busMS, float64(time.Since(start).Microseconds())/1000/batch)
		if len(resp.BatchItemFailures) > 0 {
			return errors.New("the bus door handed events back")
		}
		for k, v := range m.Snapshot() {
			busCalls[k] += v
		}
		u := acc.Take()
		busWCU += u.WCU + u.IndexWCU
	}
	for i := range eventbridgeEvents {
		req := benchRequest(testbody.JSON(fmt.Sprintf("evt_door_http_%d", i), 3<<10))
		m.Reset()
		acc.Take()
		start := time.Now()
		resp, _ := rcv.Handle(ctx, req)
		httpMS = append(httpMS, float64(time.Since(start).Microseconds())/1000)
		if resp.StatusCode != 200 {
			return fmt.Errorf("the receiver answered %d", resp.StatusCode)
		}
		for k, v := range m.Snapshot() {
			httpCalls[k] += v
		}
		u := acc.Take()
		httpWCU += u.WCU + u.IndexWCU
	}
	n := float64(eventbridgeEvents)
	sends := func(c map[string]int) float64 { return float64(c["SQS.SendMessage"]) / n }
	// The bus door's intake: EventBridge's send of each event to the queue,
	// and the event source mapping's receive and delete per batch.
	busP := bench.DoorProfile{LambdaMS: median(busMS), Invocations: 1.0 / batch, WCU: busWCU / n, SQS: sends(busCalls) + 1 + 2.0/batch}
	httpP := bench.DoorProfile{LambdaMS: median(httpMS), Invocations: 1, WCU: httpWCU / n, SQS: sends(httpCalls), APIGWRequests: 1}
	dt := &bench.MD{Title: fmt.Sprintf("Doors: one new 3 KB event through each (%d events, bus door in batches of %d, measured against the emulator)", eventbridgeEvents, batch),
		Header: []string{"door", "PutItem", "SQS sends", "WCU", "handler ms per event (median)", "per 1M events"}}
	dt.Add("HTTP (API Gateway, receiver)", fmt.Sprintf("%.2f", float64(httpCalls["DynamoDB.PutItem"])/n), fmt.Sprintf("%.2f", sends(httpCalls)),
		httpWCU/n, fmt.Sprintf("%.1f", median(httpMS)), usd(bench.DoorCost(httpP, b.memoryMB())))
	dt.Add("bus (rule, intake queue, bus function)", fmt.Sprintf("%.2f", float64(busCalls["DynamoDB.PutItem"])/n), fmt.Sprintf("%.2f", sends(busCalls)),
		busWCU/n, fmt.Sprintf("%.1f", median(busMS)), usd(bench.DoorCost(busP, b.memoryMB())))
	dt.Notes = []string{
		"Per million events: the door's Lambda requests and duration (the bus function runs a batch per invocation), its ledger writes, its SQS requests " +
			"(the bus door: EventBridge's send to the intake queue plus a receive and a delete per batch, beside the enqueue both doors make) and, for the HTTP door, " +
			"API Gateway. Not in the figures: the processor, the same for both; logs; and what EventBridge charges for Stripe's partner events on the bus " +
			"($1.00 per million, " + bench.PriceEventBridge.Source + "), which a Stripe event destination costs whether or not hookledger takes the events.",
	}
	dt.Print(b.out)
	return nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
