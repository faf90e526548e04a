package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/ledger"
)

// The life of one event: the receiver creates the record (a duplicate
// delivery gets created == false), a worker claims a lease, performs the
// effects and completes. It needs a DynamoDB endpoint, so it has no Output
// line; the conformance suite runs the same calls against the emulator.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx) // AWS_ENDPOINT_URL=http://localhost:4566 for MiniStack
	if err != nil {
		panic(err)
	}
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: "hookledger"})
	if err != nil {
		panic(err)
	}
	id := ledger.ID{Source: "stripe", Tenant: "acme", Key: "evt_1NG8Du2eZvKYlo2CUI79vXWy"}

	// Receiver: one conditional put.
	if _, created, err := l.Create(ctx, ledger.NewEvent{ID: id, Type: "invoice.paid"}); err != nil {
		panic(err)
	} else if !created {
		fmt.Println("duplicate: answer 200 and stop")
		return
	}

	// Processor: lease, effects, complete.
	rec, err := l.Claim(ctx, id, time.Minute)
	var se *ledger.StateError
	switch {
	case errors.As(err, &se) && se.Record.Status == ledger.Done:
		return // someone finished it: ack the message
	case errors.Is(err, ledger.ErrLeased):
		return // someone is on it: let SQS redeliver later
	case err != nil:
		panic(err)
	}
	// ... perform the side effects with an idempotency key per effect ...
	if _, err := l.Complete(ctx, rec); errors.Is(err, ledger.ErrLeaseLost) {
		fmt.Println("lease lost: another worker took over; it will complete")
	}
}
