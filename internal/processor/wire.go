package processor

import (
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/forward"
	"github.com/hookledger/hookledger/ledger"
)

// FromConfig builds the processor from the core configuration and the
// routes the function's main registered.
func FromConfig(c config.Config, cfg aws.Config, routes engine.Routes, log *slog.Logger) (*Handler, error) {
	if err := c.ValidateProcessor(); err != nil {
		return nil, err
	}
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), c.LedgerOptions())
	if err != nil {
		return nil, err
	}
	h := &Handler{Ledger: l, Routes: routes, Lease: c.Lease, MaxAttempts: c.MaxAttempts, Unrouted: c.Unrouted, Log: log, Metrics: c.Metrics()}
	if h.Trace, err = c.Tracer(cfg, "processor", log); err != nil {
		return nil, err
	}
	if c.PayloadBucket != "" {
		h.Store = &blob.Store{API: blob.NewClient(cfg), Bucket: c.PayloadBucket, Prefix: c.PayloadPrefix}
	}
	if c.ForwardBus != "" {
		h.Forward = &forward.Publisher{API: eventbridge.NewFromConfig(cfg), Bus: c.ForwardBus}
	}
	return h, nil
}
