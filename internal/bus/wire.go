package bus

import (
	"errors"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/receiver"
)

// FromConfig builds the bus door: the sources, the ledger, the processing
// queue and the dead-letter queue it parks on. It refuses sources none of
// which takes bus events: every event would be parked.
func FromConfig(c config.Config, cfg aws.Config, getenv func(string) string, log *slog.Logger) (*Handler, error) {
	if err := c.ValidateBus(); err != nil {
		return nil, err
	}
	reg, _, err := receiver.LoadSources(c, cfg, getenv)
	if err != nil {
		return nil, err
	}
	if !reg.HasBus() {
		return nil, errors.New(`sources config: no source takes events from the bus: every event would be parked. ` +
			`List the EventBridge sources of your bus in a source's "bus_sources" (docs/eventbridge.md), or deploy with InboundEventBus empty`)
	}
	l, err := receiver.NewLedger(reg, c, cfg, log)
	if err != nil {
		return nil, err
	}
	api := sqs.NewFromConfig(cfg)
	// No payload store: an EventBridge event (at most 256 KB) always fits
	// a ledger item, so the role needs no S3 grant.
	claim := &receiver.Handler{
		Ledger: l, Queue: &queue.Sender{API: api, URL: c.QueueURL},
		Mismatch: c.Mismatch, Payload: c.Payload, Log: log, Metrics: c.Metrics(),
	}
	return &Handler{
		Sources: reg, Claim: claim, Park: &Parking{API: api, URL: c.BusDLQURL},
		Retention: c.Retention, Log: log, Metrics: c.Metrics(),
	}, nil
}
