package reclaimer

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/awsjson"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// FromConfig builds the reclaimer from the core configuration. In Lambda
// (AWS_LAMBDA_FUNCTION_NAME set) and unless HOOKLEDGER_RECLAIM_CHAIN is 0,
// a run that leaves a backlog continues by invoking its own function.
func FromConfig(c config.Config, cfg aws.Config, log *slog.Logger) (*Handler, error) {
	if err := c.ValidateReclaimer(); err != nil {
		return nil, err
	}
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), c.LedgerOptions())
	if err != nil {
		return nil, err
	}
	h := &Handler{
		Ledger: l, Lock: l, Queue: &queue.BatchSender{API: sqs.NewFromConfig(cfg), URL: c.QueueURL},
		PerShard: c.ReclaimBatch, MaxQueue: c.ReclaimMaxQueue, MaxChain: c.ReclaimChain,
		Log: log, Metrics: c.Metrics(),
	}
	if h.Trace, err = c.Tracer(cfg, "reclaimer", log); err != nil {
		return nil, err
	}
	if c.DLQURL != "" {
		h.DeadLetters = &DeadLetters{API: sqs.NewFromConfig(cfg), URL: c.DLQURL, Ledger: l}
	}
	if c.PayloadBucket != "" {
		h.Store = &blob.Store{API: blob.NewClient(cfg), Bucket: c.PayloadBucket, Prefix: c.PayloadPrefix}
	}
	// config.Off (a variable set to 0) is the handler's negative: never
	// pause, no continuations.
	if c.ReclaimChain != config.Off && c.FunctionName != "" {
		h.Continue = &Invoker{API: awsjson.NewLambda(cfg), Function: c.FunctionName}
	}
	return h, nil
}

// InvokeAPI invokes a function asynchronously (awsjson.Lambda: one signed
// request, without the Lambda client's 0.7 MB).
type InvokeAPI interface {
	InvokeAsync(ctx context.Context, function string, payload []byte) error
}

var _ InvokeAPI = awsjson.Lambda{}

// Invoker continues a run by invoking the reclaimer's own function
// asynchronously with the next Input (the role needs lambda:InvokeFunction).
type Invoker struct {
	API      InvokeAPI
	Function string
}

var _ continuer = (*Invoker)(nil)

// Continue starts the next run.
func (i *Invoker) Continue(ctx context.Context, in Input) error {
	payload, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if err := i.API.InvokeAsync(ctx, i.Function, payload); err != nil {
		return fmt.Errorf("invoke %s: %w", i.Function, err)
	}
	return nil
}
