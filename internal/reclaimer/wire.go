package reclaimer

import (
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// FromConfig builds the reclaimer from the core configuration.
func FromConfig(c config.Config, cfg aws.Config, log *slog.Logger) (*Handler, error) {
	if err := c.ValidateReclaimer(); err != nil {
		return nil, err
	}
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), c.LedgerOptions())
	if err != nil {
		return nil, err
	}
	h := &Handler{
		Ledger: l, Queue: &queue.Sender{API: sqs.NewFromConfig(cfg), URL: c.QueueURL},
		PerShard: c.ReclaimBatch, MaxReclaims: c.MaxReclaims, Log: log, Metrics: c.Metrics(),
	}
	if c.PayloadBucket != "" {
		h.Store = &blob.Store{API: blob.NewClient(cfg), Bucket: c.PayloadBucket, Prefix: c.PayloadPrefix}
	}
	return h, nil
}
