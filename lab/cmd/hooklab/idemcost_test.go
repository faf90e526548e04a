package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/idempotency"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/testbody"
	"github.com/hookledger/hookledger/lab/units"
)

// TestCostPerCall pins the idempotency module's budget against Powertools
// (2 requests and 2 write units per first call, 1 and 1 per repeat, at
// 1 KB), measured against the emulator and priced by lab/units'
// DynamoDB billing rules, for every payload size the benchmark reports: a
// first call is one conditional PutItem and one UpdateItem of 1 WCU each,
// a repeat one failed conditional PutItem of 1 WCU, a cached repeat
// nothing. It lives with the lab's meters, beside the comparison
// (bench_idem.go) that prints the same numbers.
func TestCostPerCall(t *testing.T) {
	t.Parallel()
	m := awstest.NewMeter()
	raw := awstest.Config(t)
	rawDB := dynamodb.NewFromConfig(raw)
	table := awstest.Name("idem-cost")
	if err := idempotency.CreateTable(t.Context(), rawDB, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rawDB.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table}) })
	acc := &units.Accountant{Raw: rawDB, Tables: map[string]units.TableSpec{table: {Keys: []string{"pk", "sk"}}}}
	cfg := awstest.Config(t, m.APIOption, acc.APIOption)
	for _, cached := range []bool{false, true} {
		opt := idempotency.Options{Table: table, Logger: slog.New(slog.DiscardHandler)}
		if cached {
			opt.CacheEntries = 16
		}
		s, err := idempotency.NewStore(dynamodb.NewFromConfig(cfg), opt)
		if err != nil {
			t.Fatal(err)
		}
		type event map[string]any
		f, err := idempotency.Wrap(s, "bench", func(ctx context.Context, ev event) (map[string]string, error) {
			return map[string]string{"status": "processed", "event_id": ev["id"].(string)}, nil
		}, idempotency.Config[event, map[string]string]{KeyPath: "id"})
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range testbody.Sizes {
			var ev event
			id := awstest.Name("evt")
			if err := json.Unmarshal(testbody.JSON(id, size), &ev); err != nil {
				t.Fatal(err)
			}
			measure := func(what string, wantReq int, wantWCU float64) {
				t.Helper()
				m.Reset()
				acc.Take()
				if _, _, err := f.Call(t.Context(), ev); err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, v := range m.Snapshot() {
					n += v
				}
				u := acc.Take()
				if n != wantReq || u.WCU+u.IndexWCU != wantWCU || u.RCU != 0 {
					t.Errorf("%s, %s, cache %v: %d requests %v (%.1f WCU, %.1f RCU), want %d and %.0f WCU",
						testbody.Label(size), what, cached, n, m.Snapshot(), u.WCU+u.IndexWCU, u.RCU, wantReq, wantWCU)
				}
			}
			measure("first call", 2, 2)
			if cached {
				measure("repeat", 0, 0)
			} else {
				measure("repeat", 1, 1)
			}
		}
	}
}
