// Package latency is SDK middleware that makes every AWS request wait as
// long as it would on AWS, so that a handler timed against the local
// emulator (which answers in a millisecond or two) shows the latency a
// sender would see: how many round trips it waits for, one after another.
//
// The waits are drawn per attempt, uniformly from a range per service. The
// ranges of Published are taken from published figures:
//
//   - DynamoDB 5–10 ms: AWS describes DynamoDB as "single-digit millisecond
//     performance" (https://aws.amazon.com/blogs/database/understanding-amazon-dynamodb-latency/),
//     measured service-side; the upper half of the single digits covers the
//     client's side within the Region.
//   - SQS 10–20 ms: AWS's own measurement of a 1 KB SendMessage from EC2 in
//     the same Region, 16 ms, published in the revision of the Stony Brook
//     "Cloud Performance Benchmark Series: Amazon SQS" (July 2012 revision,
//     "Amazon Provided Results").
//   - S3 100–200 ms: "consistent small object latencies (and first-byte-out
//     latencies for larger objects) of roughly 100–200 milliseconds"
//     (https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html).
//
// These are typical figures, not guarantees: tails on AWS are longer (a
// DynamoDB request retried server-side can take 100 ms or more), so a p99
// here is the p99 of a well-behaved day.
package latency

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Range is the wait added to one request: uniform in [Min, Max].
type Range struct{ Min, Max time.Duration }

// Injector adds a wait per request, by service. Safe for concurrent use.
type Injector struct {
	// ByService maps a lower-case SDK service id (dynamodb, sqs, s3) to its
	// range; services not listed get no wait.
	ByService map[string]Range

	mu  sync.Mutex
	rng *rand.Rand
}

// Published returns an injector with the published figures of the package
// doc, seeded for reproducible draws.
func Published(seed uint64) *Injector {
	return &Injector{
		ByService: map[string]Range{
			"dynamodb": {5 * time.Millisecond, 10 * time.Millisecond},
			"sqs":      {10 * time.Millisecond, 20 * time.Millisecond},
			"s3":       {100 * time.Millisecond, 200 * time.Millisecond},
		},
		rng: rand.New(rand.NewPCG(seed, 0x6c6174)),
	}
}

// Sources lists the figures and where they come from, for reports.
func Sources() []string {
	return []string{
		"DynamoDB 5–10 ms per request: \"single-digit millisecond performance\" (aws.amazon.com/blogs/database/understanding-amazon-dynamodb-latency/)",
		"SQS 10–20 ms per request: AWS's measurement of a 1 KB SendMessage within a Region, 16 ms (Stony Brook Cloud Performance Benchmark Series: Amazon SQS, July 2012 revision, \"Amazon Provided Results\")",
		"S3 100–200 ms per request: \"consistent small object latencies ... of roughly 100–200 milliseconds\" (docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html)",
	}
}

// APIOption installs the injector on a client. The wait is added per
// attempt, after the request has been built and signed, just before it is
// sent; a cancelled context ends it early.
func (i *Injector) APIOption(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("hookledger.latency",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if d := i.draw(strings.ToLower(awsmiddleware.GetServiceID(ctx))); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return middleware.FinalizeOutput{}, middleware.Metadata{}, ctx.Err()
				}
			}
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

func (i *Injector) draw(service string) time.Duration {
	r, ok := i.ByService[service]
	if !ok || r.Max <= 0 {
		return 0
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.rng == nil {
		i.rng = rand.New(rand.NewPCG(1, 2))
	}
	return r.Min + time.Duration(i.rng.Int64N(int64(r.Max-r.Min)+1))
}
