// Package meter counts the AWS requests an SDK client sends, by service and
// operation, with SDK middleware. Tests use it to prove request budgets
// (a duplicate delivery costs one DynamoDB request and no SQS request);
// benchmarks use it to price events.
package meter

import (
	"context"
	"sort"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Meter counts requests. The zero value is not usable; call New.
type Meter struct {
	mu     sync.Mutex
	counts map[string]int
}

// New returns an empty meter.
func New() *Meter { return &Meter{counts: map[string]int{}} }

// APIOption installs the meter on a client (config.WithAPIOptions or a
// client's APIOptions). It counts every attempt that reaches the transport,
// so SDK retries count too.
func (m *Meter) APIOption(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("hookledger.meter",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			m.add(awsmiddleware.GetServiceID(ctx) + "." + awsmiddleware.GetOperationName(ctx))
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
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
