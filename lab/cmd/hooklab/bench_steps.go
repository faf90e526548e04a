package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/hookledger/hookledger/internal/engine"
	"io"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/lab/bench"
	"github.com/hookledger/hookledger/ledger"
)

// steps measures what named steps cost the processor: ledger writes and
// write units per event for handlers with no step, one, two and three
// at-least-once steps, and one at-most-once step, each processed once
// against the emulator with the real ledger.
func (b *benchRun) steps(ctx context.Context) error {
	env, cleanup, err := b.newEnv(ctx, "steps", "")
	if err != nil {
		return err
	}
	defer cleanup()
	m, acc, l, plain, err := b.meteredLedgers(ctx, env)
	if err != nil {
		return err
	}
	effect := func(name string) func(context.Context, string) (string, error) {
		return func(context.Context, string) (string, error) { return "id_" + name + "_0123456789", nil }
	}
	handlers := []struct {
		label string
		typ   string
		h     hookledger.HandlerFunc
	}{
		{"no steps (an effect without Step)", "none", func(ctx context.Context, ev *hookledger.Event) error { return nil }},
		{"1 step", "one", func(ctx context.Context, ev *hookledger.Event) error {
			_, err := ev.Step(ctx, "charge", effect("charge"))
			return err
		}},
		{"2 steps", "two", func(ctx context.Context, ev *hookledger.Event) error {
			if _, err := ev.Step(ctx, "charge", effect("charge")); err != nil {
				return err
			}
			_, err := ev.Step(ctx, "provision", effect("provision"))
			return err
		}},
		{"3 steps", "three", func(ctx context.Context, ev *hookledger.Event) error {
			for _, s := range []string{"charge", "provision", "email"} {
				if _, err := ev.Step(ctx, s, effect(s)); err != nil {
					return err
				}
			}
			return nil
		}},
		{"1 at-most-once step", "amo", func(ctx context.Context, ev *hookledger.Event) error {
			_, err := ev.Step(ctx, "sms", effect("sms"), hookledger.AtMostOnce())
			return err
		}},
		{"charge + at-most-once notify (the shipped effect's shape)", "demo", func(ctx context.Context, ev *hookledger.Event) error {
			if _, err := ev.Step(ctx, "charge", effect("charge")); err != nil {
				return err
			}
			_, err := ev.Step(ctx, "notify", effect("notify"), hookledger.AtMostOnce())
			return err
		}},
	}
	routes := hookledger.NewRouter()
	for _, h := range handlers {
		routes.Handle("stripe", h.typ, h.h)
	}
	proc := &processor.Handler{Ledger: l, Routes: engine.MustRoutes(routes), Log: discardLog()}
	t := &bench.MD{Title: "Steps: processor writes per event (measured against the emulator; claim and complete included)",
		Header: []string{"handler", "UpdateItem", "other calls", "WCU table", "WCU index", "record B (largest)"}}
	for i, h := range handlers {
		id := ledger.Key{Source: "stripe", Tenant: "acme", ID: fmt.Sprintf("evt_steps_%d_%s", i, h.typ)}
		if _, _, err := plain.Create(ctx, ledger.NewEvent{Key: id, Type: h.typ, BodySHA256: "x"}); err != nil {
			return err
		}
		body, err := queue.Encode(queue.Message{Source: id.Source, Tenant: id.Tenant, ID: id.ID, Type: h.typ, SHA256: "x", Body: []byte(`{}`)})
		if err != nil {
			return err
		}
		m.Reset()
		acc.Take()
		resp, _ := proc.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", Body: body}}})
		if len(resp.BatchItemFailures) > 0 {
			return errors.New("processor failed a steps event")
		}
		calls, u := m.Snapshot(), acc.Take()
		updates := calls["DynamoDB.UpdateItem"]
		other := 0
		for k, v := range calls {
			if k != "DynamoDB.UpdateItem" {
				other += v
			}
		}
		recSize := 0
		if n := len(u.Written); n > 0 {
			recSize = u.Written[n-1]
		}
		t.Add(h.label, updates, other, u.WCU, u.IndexWCU, recSize)
	}
	t.Notes = []string{
		"A step's completion rides on the ledger's next write: the last one on Complete, earlier ones on the write that starts the next step. " +
			"So one step costs what an event without steps costs (claim + complete), and each further step one UpdateItem of 1 WCU. " +
			"An at-most-once step adds the write that records it started before its effect runs (which also carries any earlier completion).",
	}
	t.Print(b.out)
	return nil
}

func discardLog() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }
