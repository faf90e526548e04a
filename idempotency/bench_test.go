package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/hookledger/hookledger/idempotency"
	"github.com/hookledger/hookledger/idempotencytest"
	"github.com/hookledger/hookledger/internal/testbody"
)

// BenchmarkCall is the package's own work per call, with the store in
// memory (no network): key selection by JSON path, canonical JSON, digest,
// result encoding, the engine. Against DynamoDB the round trips dominate
// (see make bench).
func BenchmarkCall(b *testing.B) {
	for _, size := range testbody.Sizes {
		for _, kind := range []string{"first", "repeat"} {
			b.Run(fmt.Sprintf("%s/%s", testbody.Label(size), kind), func(b *testing.B) {
				s, _ := idempotency.NewStoreWith(idempotencytest.NewMemory(nil), idempotency.Options{Logger: slog.New(slog.DiscardHandler)})
				f, _ := idempotency.Wrap(s, "bench", func(_ context.Context, ev json.RawMessage) (map[string]string, error) {
					return map[string]string{"status": "processed"}, nil
				}, idempotency.Config[json.RawMessage, map[string]string]{KeyPath: "id"})
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				bodies := make([]json.RawMessage, b.N)
				for i := range bodies {
					bodies[i] = testbody.JSON(fmt.Sprintf("evt_%d", i), size)
					if kind == "repeat" {
						f.Call(ctx, bodies[i])
					}
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, _, err := f.Call(ctx, bodies[i]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
