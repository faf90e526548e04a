package awstest

import (
	"context"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Meter counts the AWS calls an SDK client makes, keyed "Service.Operation"
// (e.g. "DynamoDB.PutItem"), so tests can pin request budgets. The SDK's
// retried attempts are counted apart (Retries): an emulator that cuts an
// answer short does not break a budget.
type Meter struct {
	mu       sync.Mutex
	counts   map[string]int // calls
	attempts map[string]int // attempts, retries included
}

// NewMeter returns an empty meter.
func NewMeter() *Meter { return &Meter{counts: map[string]int{}, attempts: map[string]int{}} }

// APIOption installs the meter on a client (config.WithAPIOptions). It
// counts each call before the retry loop and each attempt inside it.
func (m *Meter) APIOption(stack *middleware.Stack) error {
	count := func(into map[string]int, ctx context.Context) {
		m.mu.Lock()
		into[awsmiddleware.GetServiceID(ctx)+"."+awsmiddleware.GetOperationName(ctx)]++
		m.mu.Unlock()
	}
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("hookledger.meter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			count(m.counts, ctx)
			return next.HandleInitialize(ctx, in)
		}), middleware.Before); err != nil {
		return err
	}
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("hookledger.meter.attempts",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			count(m.attempts, ctx)
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

// Reset forgets every count.
func (m *Meter) Reset() {
	m.mu.Lock()
	clear(m.counts)
	clear(m.attempts)
	m.mu.Unlock()
}

// Snapshot returns a copy of the call counts.
func (m *Meter) Snapshot() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.counts))
	for k, v := range m.counts {
		out[k] = v
	}
	return out
}

// Service sums the calls of one service ID ("DynamoDB", "SQS").
func (m *Meter) Service(id string) int {
	total := 0
	for k, v := range m.Snapshot() {
		if strings.HasPrefix(k, id+".") {
			total += v
		}
	}
	return total
}
