package receiver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/internal/testbody"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// benchDB stands in for DynamoDB: every put succeeds at once, so the
// benchmark measures the receiver's own work (decode, verify, extract the
// key, build the record and the compressed payload item, encode the
// message) and none of the network.
type benchDB struct{ ledger.API }

func (benchDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return &dynamodb.PutItemOutput{}, nil
}

type benchSQS struct{}

func (benchSQS) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return &sqs.SendMessageOutput{}, nil
}

type benchSources struct {
	v      *webhook.Verifier
	secret string
}

func (s benchSources) Verifier(string, string) (*webhook.Verifier, []source.Ref, error) {
	return s.v, []source.Ref{{Scheme: source.SchemeLiteral, Name: s.secret}}, nil
}

func (s benchSources) Secrets(context.Context, []source.Ref) source.Resolved {
	return source.Resolved{Values: []string{s.secret}}
}

func (benchSources) ReplayGuard(string) bool { return false }

// benchProviders are the schemes benchmarked, with a secret of the form each
// one expects. generic has no id header: its key is derived from the body.
var benchProviders = []struct {
	name   string
	cfg    webhook.Config
	secret string
}{
	{"stripe", webhook.Config{Provider: "stripe"}, "whsec_bench_0123456789"},
	{"github", webhook.Config{Provider: "github"}, "gh-bench-secret"},
	{"standard-webhooks", webhook.Config{Provider: "standard-webhooks"}, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
	{"shopify", webhook.Config{Provider: "shopify"}, "shpss_bench_secret"},
	{"slack", webhook.Config{Provider: "slack"}, "slack-bench-signing-secret"},
	{"generic-derived", webhook.Config{Provider: "generic", Generic: &webhook.GenericConfig{}}, "generic-bench-secret"},
}

// BenchmarkReceiver is the receiver's request path per provider and body
// size, with DynamoDB and SQS replaced by instant fakes.
func BenchmarkReceiver(b *testing.B) {
	for _, p := range benchProviders {
		for _, size := range testbody.Sizes {
			b.Run(fmt.Sprintf("%s/%s", p.name, strings.ReplaceAll(testbody.Label(size), " ", "")), func(b *testing.B) {
				v, err := webhook.New(p.cfg)
				if err != nil {
					b.Fatal(err)
				}
				l, err := ledger.New(benchDB{}, ledger.Options{Table: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				h := &Handler{
					Sources: benchSources{v, p.secret}, Ledger: l, Queue: &queue.Sender{API: benchSQS{}, URL: "q"},
					Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
				}
				body := testbody.JSON("evt_bench_0001", size)
				hdr, err := v.Sign(webhook.Message{ID: "msg_bench_0001", Type: "invoice.paid", Body: body, Now: time.Now()}, p.secret)
				if err != nil {
					b.Fatal(err)
				}
				req := events.APIGatewayV2HTTPRequest{
					RawPath: "/webhooks/" + p.name + "/acme", Headers: map[string]string{}, Body: string(body),
					PathParameters: map[string]string{"source": p.name, "tenant": "acme"},
					RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: "hooks.example.com",
						HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost}},
				}
				for k, vs := range hdr {
					req.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
				}
				ctx := context.Background()
				if resp, _ := h.Handle(ctx, req); resp.StatusCode != http.StatusOK {
					b.Fatalf("receiver answered %d %s", resp.StatusCode, resp.Body)
				}
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					h.Handle(ctx, req)
				}
			})
		}
	}
}

// BenchmarkReceiverRejects is what a delivery the receiver refuses costs it:
// a forged signature (the cost of a flood against a public function URL,
// which no API Gateway throttle stands in front of) and a path that names
// no source and tenant. Neither makes an AWS call; the secret is cached.
func BenchmarkReceiverRejects(b *testing.B) {
	v, err := webhook.New(webhook.Config{Provider: "stripe"})
	if err != nil {
		b.Fatal(err)
	}
	l, err := ledger.New(benchDB{}, ledger.Options{Table: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	h := &Handler{
		Sources: benchSources{v, "whsec_bench_0123456789"}, Ledger: l, Queue: &queue.Sender{API: benchSQS{}, URL: "q"},
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}
	body := testbody.JSON("evt_bench_0001", 1024)
	hdr, err := v.Sign(webhook.Message{Body: body, Now: time.Now()}, "whsec_forged")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name, tenant string
		want         int
	}{{"forged-signature/1KB", "acme", http.StatusUnauthorized}, {"no-tenant-in-path/1KB", "", http.StatusNotFound}} {
		b.Run(c.name, func(b *testing.B) {
			req := events.APIGatewayV2HTTPRequest{
				RawPath: "/webhooks/stripe/" + c.tenant, Headers: map[string]string{"stripe-signature": hdr.Get("Stripe-Signature")}, Body: string(body),
				RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: "hooks.example.com",
					HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost}},
			}
			ctx := context.Background()
			if resp, _ := h.Handle(ctx, req); resp.StatusCode != c.want {
				b.Fatalf("receiver answered %d %s, want %d", resp.StatusCode, resp.Body, c.want)
			}
			b.ReportAllocs()
			for b.Loop() {
				h.Handle(ctx, req)
			}
		})
	}
}
