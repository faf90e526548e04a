package processor

import (
	"context"
	"fmt"
	"github.com/hookledger/hookledger/internal/engine"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/hookledger/hookledger"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/testbody"
	"github.com/hookledger/hookledger/ledger"
)

// benchDB stands in for DynamoDB: every update succeeds at once and returns
// a leased record, so the benchmark measures the processor's own work
// (decode the message, build the claim and complete requests, route, log).
type benchDB struct{ ledger.API }

var benchLeased = map[string]types.AttributeValue{
	"pk": &types.AttributeValueMemberS{Value: "ev#stripe#acme#evt_bench_0001"}, "sk": &types.AttributeValueMemberS{Value: "r"},
	"source": &types.AttributeValueMemberS{Value: "stripe"}, "tenant": &types.AttributeValueMemberS{Value: "acme"},
	"event_id": &types.AttributeValueMemberS{Value: "evt_bench_0001"}, "status": &types.AttributeValueMemberS{Value: "processing"},
	"lease_owner": &types.AttributeValueMemberS{Value: "0123456789abcdef0123456789abcdef"},
	"attempts":    &types.AttributeValueMemberN{Value: "1"}, "ver": &types.AttributeValueMemberN{Value: "2"},
}

func (benchDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return &dynamodb.UpdateItemOutput{Attributes: benchLeased}, nil
}

// BenchmarkProcessor is one SQS message through the processor (claim, a
// no-op effect, complete) per body size, with DynamoDB replaced by an
// instant fake.
func BenchmarkProcessor(b *testing.B) {
	for _, size := range testbody.Sizes {
		b.Run(strings.ReplaceAll(testbody.Label(size), " ", ""), func(b *testing.B) {
			l, err := ledger.New(benchDB{}, ledger.Options{Table: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			routes := hookledger.NewRouter()
			routes.HandleFunc("*", "*", func(ctx context.Context, ev *hookledger.Event) error {
				_ = ev.IdempotencyKey("charge")
				return nil
			})
			h := &Handler{Ledger: l, Routes: engine.MustRoutes(routes), Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
			body := testbody.JSON("evt_bench_0001", size)
			msg, err := queue.Encode(queue.Message{Source: "stripe", Tenant: "acme", ID: "evt_bench_0001", Type: "invoice.paid",
				SHA256: strings.Repeat("ab", 32), Body: body, ReceivedAt: 1_780_000_000_000})
			if err != nil {
				b.Fatal(err)
			}
			batch := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-1", Body: msg}}}
			ctx := context.Background()
			if resp, _ := h.Handle(ctx, batch); len(resp.BatchItemFailures) != 0 {
				b.Fatal(fmt.Sprint("processor reported failures: ", resp.BatchItemFailures))
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				h.Handle(ctx, batch)
			}
		})
	}
}
