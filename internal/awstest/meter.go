// Meter counts the AWS requests an SDK client makes, by service and
// operation, with SDK middleware. Tests use it to prove request budgets
// (a duplicate delivery costs one DynamoDB request and no SQS request);
// benchmarks use it to price events.
//
// A request is one API call as the code makes it. The SDK may send it more
// than once (a throttled, failed or cut-short attempt is retried): those
// extra attempts are counted apart (Retries), so a budget test does not
// fail because the emulator cut a response short, and a benchmark can still
// say how many attempts it took.
package awstest

import (
	"context"
	"sort"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Meter counts requests. The zero value is not usable; call NewMeter.
type Meter struct {
	mu       sync.Mutex
	counts   map[string]int // calls
	attempts map[string]int // attempts, retries included
}

// New returns an empty meter.
func NewMeter() *Meter { return &Meter{counts: map[string]int{}, attempts: map[string]int{}} }

// APIOption installs the meter on a client (config.WithAPIOptions or a
// client's APIOptions). It counts each call once, before the retry loop,
// and each attempt after the first inside it.
func (m *Meter) APIOption(stack *middleware.Stack) error {
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("hookledger.meter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			m.add(awsmiddleware.GetServiceID(ctx) + "." + awsmiddleware.GetOperationName(ctx))
			return next.HandleInitialize(ctx, in)
		}), middleware.Before); err != nil {
		return err
	}
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("hookledger.meter.attempts",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			m.mu.Lock()
			m.attempts[awsmiddleware.GetServiceID(ctx)+"."+awsmiddleware.GetOperationName(ctx)]++
			m.mu.Unlock()
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

// Retries returns the attempts beyond the first, keyed like Snapshot.
func (m *Meter) Retries() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for k, v := range m.attempts {
		if r := v - m.counts[k]; r > 0 {
			out[k] = r
		}
	}
	return out
}

func (m *Meter) add(op string) {
	m.mu.Lock()
	m.counts[op]++
	m.mu.Unlock()
}

// Reset forgets every count.
func (m *Meter) Reset() {
	m.mu.Lock()
	clear(m.counts)
	clear(m.attempts)
	m.mu.Unlock()
}

// Snapshot returns a copy of the counts keyed "Service.Operation", e.g.
// "DynamoDB.PutItem".
func (m *Meter) Snapshot() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.counts))
	for k, v := range m.counts {
		out[k] = v
	}
	return out
}

// Service sums the counts of one service ID ("DynamoDB", "SQS").
func (m *Meter) Service(id string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	total := 0
	for k, v := range m.counts {
		if len(k) > len(id) && k[:len(id)] == id && k[len(id)] == '.' {
			total += v
		}
	}
	return total
}

// Ops lists the counted operations, sorted.
func (m *Meter) Ops() []string {
	snap := m.Snapshot()
	ops := make([]string, 0, len(snap))
	for k := range snap {
		ops = append(ops, k)
	}
	sort.Strings(ops)
	return ops
}
