package receiver

import (
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/queue"
)

// FromConfig builds the receiver at cold start: it validates the
// configuration, builds every source's verifier once, and creates the AWS
// clients. It is not in package config, so that the other functions' binaries
// do not link the secret stores' SDKs.
func FromConfig(c config.Config, cfg aws.Config, getenv func(string) string, log *slog.Logger) (*Handler, error) {
	if err := c.ValidateReceiver(); err != nil {
		return nil, err
	}
	reg, grants, err := LoadSources(c, cfg, getenv)
	if err != nil {
		return nil, err
	}
	if grants != nil {
		if err := reg.CheckGrants(*grants); err != nil {
			return nil, fmt.Errorf("sources config: every delivery of these tenants would get 503 on AWS (AccessDenied):\n%w", err)
		}
	}
	if c.FunctionName != "" && getenv("AWS_ENDPOINT_URL") == "" {
		// Deployed on AWS (an emulator sets AWS_ENDPOINT_URL).
		if err := reg.CheckStored(); err != nil {
			return nil, fmt.Errorf("sources config: signing secrets must come from a secret store on AWS:\n%w", err)
		}
	}
	l, err := NewLedger(reg, c, cfg, log)
	if err != nil {
		return nil, err
	}
	h := &Handler{
		Sources: reg, Ledger: l, Queue: &queue.Sender{API: sqs.NewFromConfig(cfg), URL: c.QueueURL},
		MaxBody: c.MaxBody, Mismatch: c.Mismatch, Payload: c.Payload, Log: log, Metrics: c.Metrics(),
	}
	if c.PayloadBucket != "" {
		h.Store, h.StoreAbove = &blob.Store{API: blob.NewClient(cfg), Bucket: c.PayloadBucket, Prefix: c.PayloadPrefix}, c.PayloadStoreAbove
	}
	return h, nil
}
