package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/stripe"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/lab/bench"
	"github.com/hookledger/hookledger/lab/units"
	"github.com/hookledger/hookledger/ledger"
)

// order measures what keeping a route's events in order costs the
// processor: ledger calls, write and read units per event for a route
// without InOrder, and for an InOrder route's first event of a resource, a
// newer event after another one, and a stale event (skipped), each
// processed once against the emulator with the real ledger; and the
// dollars per million events those extra units cost at list prices.
func (b *benchRun) order(ctx context.Context) error {
	env, cleanup, err := b.newEnv(ctx, "order", "")
	if err != nil {
		return err
	}
	defer cleanup()
	m, acc, l, plain, err := b.meteredLedgers(ctx, env)
	if err != nil {
		return err
	}
	noop := func(context.Context, *hookledger.Event) error { return nil }
	routes := hookledger.NewRouter()
	routes.HandleFunc("stripe", "unordered", noop)
	routes.HandleFunc("stripe", "ordered", noop, hookledger.InOrder(stripe.Object), hookledger.SkipStale())
	proc := &processor.Handler{Ledger: l, Routes: engine.MustRoutes(routes), Log: discardLog()}
	cases := []struct {
		label, typ string
		created    int64
	}{
		{"route without InOrder", "unordered", 100},
		{"InOrder: the resource's first event", "ordered", 100},
		{"InOrder: a newer event after another", "ordered", 200},
		{"InOrder: a stale event (SkipStale)", "ordered", 50},
	}
	t := &bench.MD{Title: "Order per resource: processor calls and units per event (measured against the emulator; claim and complete included)",
		Header: []string{"event", "UpdateItem", "GetItem", "WCU", "RCU", "extra $ per 1M events"}}
	var base units.Usage
	for i, c := range cases {
		id := ledger.Key{Source: "stripe", Tenant: "acme", ID: fmt.Sprintf("evt_order_%d_0123456789abcdef", i)}
		if _, _, err := plain.Create(ctx, ledger.NewEvent{Key: id, Type: c.typ, BodySHA256: "x"}); err != nil {
			return err
		}
		body := fmt.Sprintf(`{"id":%q,"object":"event","type":"customer.subscription.updated","created":%d,"data":{"object":{"id":"sub_1MowQVLkdIwHu7ixeRlqHVzs","object":"subscription","status":"active"}}}`, id.ID, c.created)
		msg, err := queue.Encode(queue.Message{Source: id.Source, Tenant: id.Tenant, ID: id.ID, Type: c.typ, SHA256: "x", Body: []byte(body)})
		if err != nil {
			return err
		}
		m.Reset()
		acc.Take()
		resp, _ := proc.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", Body: msg}}})
		if len(resp.BatchItemFailures) > 0 {
			return errors.New("processor failed an order bench event")
		}
		calls, u := m.Snapshot(), acc.Take()
		if i == 0 {
			base = u
		}
		extra := (u.WCU-base.WCU)*bench.PriceDynamoWrite.USD + (u.RCU-base.RCU)*bench.PriceDynamoRead.USD
		t.Add(c.label, calls["DynamoDB.UpdateItem"], calls["DynamoDB.GetItem"], u.WCU, u.RCU, fmt.Sprintf("%.3f", extra))
	}
	t.Notes = []string{
		"An InOrder route reads the resource's order item and, when another event took it last, that event's record (is its run over?), then takes the resource with one conditional write of 1 WCU. " +
			"The holder never writes to let go. A stale event writes nothing more: its skip is the write that completes it. " +
			fmt.Sprintf("Prices: %s $%.3f per %s, %s $%.3f per %s.", bench.PriceDynamoWrite.What, bench.PriceDynamoWrite.USD, bench.PriceDynamoWrite.Per, bench.PriceDynamoRead.What, bench.PriceDynamoRead.USD, bench.PriceDynamoRead.Per),
		"Not in this table: waiting for a busy resource (two reads per look) and giving an event back (one write); see docs/ordering.md.",
	}
	t.Print(b.out)
	return nil
}
