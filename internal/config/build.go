package config

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/effect"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/ledger"
)

// Logger returns a JSON slog logger at the configured level.
func (c Config) Logger(w io.Writer) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(strings.ToUpper(c.LogLevel)))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// Metrics returns the EMF emitter (stdout, as Lambda ships it to CloudWatch
// Logs), or nil when metrics are off.
func (c Config) Metrics() *metric.Emitter {
	if !c.EmitMetrics {
		return nil
	}
	return metric.New(os.Stdout, c.Stage)
}

// Ledger builds the ledger on a DynamoDB client from cfg.
func (c Config) Ledger(cfg aws.Config) (*ledger.Ledger, error) {
	return ledger.New(dynamodb.NewFromConfig(cfg), c.LedgerOptions())
}

// Processor builds the processor's handler with the routes of package
// effect.
func (c Config) Processor(cfg aws.Config, log *slog.Logger) (*processor.Handler, error) {
	if err := c.ValidateProcessor(); err != nil {
		return nil, err
	}
	l, err := c.Ledger(cfg)
	if err != nil {
		return nil, err
	}
	routes := processor.NewRouter()
	effect.Register(routes, effect.Config{PaymentsURL: c.PaymentsURL})
	return &processor.Handler{Ledger: l, Routes: routes, Lease: c.Lease, MaxAttempts: c.MaxAttempts, Log: log, Metrics: c.Metrics()}, nil
}

// Reclaimer builds the reclaimer's handler; with PAYMENTS_URL set it checks
// the demo charge downstream before re-running an expired lease.
func (c Config) Reclaimer(cfg aws.Config, log *slog.Logger) (*reclaimer.Handler, error) {
	if err := c.ValidateReclaimer(); err != nil {
		return nil, err
	}
	l, err := c.Ledger(cfg)
	if err != nil {
		return nil, err
	}
	h := &reclaimer.Handler{
		Ledger: l, Queue: &queue.Sender{API: sqs.NewFromConfig(cfg), URL: c.QueueURL},
		PerShard: c.ReclaimBatch, MaxReclaims: c.MaxReclaims, Log: log, Metrics: c.Metrics(),
	}
	if c.PaymentsURL != "" {
		h.Check = &effect.ChargeCheck{BaseURL: c.PaymentsURL, Client: &http.Client{Timeout: 5 * time.Second}}
	}
	return h, nil
}

// Fatal prints a configuration error the way every entry point does and
// exits 2.
func Fatal(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(2)
}
