package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/idempotency"
	"github.com/hookledger/hookledger/idempotency/idempotencytest"
)

// BenchmarkCall is the package's own work per call, with the store in
// memory (no network): key selection by JSON path, canonical JSON, digest,
// result encoding, the engine. Against DynamoDB the round trips dominate
// (see make bench).
func BenchmarkCall(b *testing.B) {
	for _, size := range []int{1 << 10, 10 << 10, 100 << 10} {
		for _, kind := range []string{"first", "repeat"} {
			b.Run(fmt.Sprintf("%d_KB/%s", size>>10, kind), func(b *testing.B) {
				s, _ := idempotency.NewStoreWith(idempotencytest.NewMemory(nil), idempotency.Options{Logger: slog.New(slog.DiscardHandler)})
				f, _ := idempotency.Wrap(s, "bench", func(_ context.Context, ev json.RawMessage) (map[string]string, error) {
					return map[string]string{"status": "processed"}, nil
				}, idempotency.Config[json.RawMessage, map[string]string]{KeyPath: "id"})
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				bodies := make([]json.RawMessage, b.N)
				for i := range bodies {
					bodies[i] = eventBody(fmt.Sprintf("evt_%d", i), size)
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

// eventBody is a JSON event of about size bytes whose "id" is id, shaped
// like a provider's: an invoice with line items. The key is read from the
// raw bytes, so the size and the shape are what cost.
func eventBody(id string, size int) json.RawMessage {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":%q,"object":"event","type":"invoice.paid","data":{"object":{"id":"in_%s","currency":"usd","lines":[`, id, id)
	for i := 0; b.Len() < size-150; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"il_%s_%d","amount":%d,"quantity":%d,"description":"%d × Team seat (at $%d.00 / month)","period":{"start":1780000000,"end":1782592000}}`,
			id, i, 100*(i%500+1)*(i%20+1), i%20+1, i%20+1, i%500+1)
	}
	b.WriteString(`],"status":"paid"}}}`)
	return json.RawMessage(b.String())
}
