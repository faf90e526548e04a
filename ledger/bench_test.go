package ledger_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/internal/testbody"
	"github.com/hookledger/hookledger/ledger"
)

// benchDB answers every request at once, so the benchmarks measure the
// ledger's own work: building items and expressions, compressing payloads,
// decoding answers.
type benchDB struct{ ledger.API }

func (benchDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return &dynamodb.PutItemOutput{}, nil
}

func (benchDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return &dynamodb.UpdateItemOutput{Attributes: map[string]types.AttributeValue{
		"source": &types.AttributeValueMemberS{Value: "stripe"}, "tenant": &types.AttributeValueMemberS{Value: "acme"},
		"event_key": &types.AttributeValueMemberS{Value: "evt_1"}, "status": &types.AttributeValueMemberS{Value: "processing"},
		"lease_owner": &types.AttributeValueMemberS{Value: "tok"}, "attempts": &types.AttributeValueMemberN{Value: "1"},
	}}, nil
}

func benchLedger(b *testing.B) *ledger.Ledger {
	l, err := ledger.New(benchDB{}, ledger.Options{Table: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

var benchID = ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_bench_0001"}

func BenchmarkCreate(b *testing.B) {
	l, ctx := benchLedger(b), context.Background()
	ev := ledger.NewEvent{Key: benchID, Type: "invoice.paid", BodySHA256: strings.Repeat("ab", 32)}
	b.ReportAllocs()
	for b.Loop() {
		l.Create(ctx, ev)
	}
}

// BenchmarkPutPayload is the payload item per body size, compression
// included.
func BenchmarkPutPayload(b *testing.B) {
	for _, size := range testbody.Sizes {
		b.Run(strings.ReplaceAll(testbody.Label(size), " ", ""), func(b *testing.B) {
			l, ctx := benchLedger(b), context.Background()
			body := testbody.JSON("evt_bench_0001", size)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				l.PutPayload(ctx, benchID, body, "")
			}
		})
	}
}

// BenchmarkGzip compares a fresh gzip writer per payload (what PutPayload
// does) with a pooled one reset per payload, to size the gain of pooling.
func BenchmarkGzip(b *testing.B) {
	var pool = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed); return w }}
	for _, size := range testbody.Sizes {
		body := testbody.JSON("evt_bench_0001", size)
		label := strings.ReplaceAll(testbody.Label(size), " ", "")
		b.Run("fresh/"+label, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var buf bytes.Buffer
				zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
				zw.Write(body)
				zw.Close()
			}
		})
		b.Run("pooled/"+label, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var buf bytes.Buffer
				zw := pool.Get().(*gzip.Writer)
				zw.Reset(&buf)
				zw.Write(body)
				zw.Close()
				pool.Put(zw)
			}
		})
	}
}

func BenchmarkClaimComplete(b *testing.B) {
	l, ctx := benchLedger(b), context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rec, _ := l.Claim(ctx, benchID, time.Minute)
		l.Complete(ctx, rec)
	}
}
