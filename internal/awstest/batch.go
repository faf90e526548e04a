package awstest

import (
	"context"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
)

// BatchEntryFailures is SDK middleware that makes SQS fail chosen entries
// of SendMessageBatch the way SQS reports a per-entry failure: the entries
// for which fail returns true are taken out of the request before it is
// sent (so they are really not queued) and come back in the answer's Failed
// list, with SenderFault as given (false: an SQS-side failure worth
// retrying later; true: the entry itself was refused). A batch whose every
// entry fails is answered without a request. Failed counts the entries
// failed so far.
type BatchEntryFailures struct {
	Fail        func(body string) bool
	SenderFault bool
	Failed      atomic.Int64
}

// APIOption installs the middleware on a client.
func (f *BatchEntryFailures) APIOption(st *middleware.Stack) error {
	return st.Initialize.Add(middleware.InitializeMiddlewareFunc("hookledger.awstest.batch_entries", f.handle), middleware.After)
}

func (f *BatchEntryFailures) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	p, ok := in.Parameters.(*sqs.SendMessageBatchInput)
	if !ok {
		return next.HandleInitialize(ctx, in)
	}
	var keep []types.SendMessageBatchRequestEntry
	var failed []types.BatchResultErrorEntry
	for _, e := range p.Entries {
		if f.Fail(aws.ToString(e.MessageBody)) {
			code := "InternalError"
			if f.SenderFault {
				code = "InvalidMessageContents"
			}
			failed = append(failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String(code), SenderFault: f.SenderFault,
				Message: aws.String("entry failed (injected)")})
			continue
		}
		keep = append(keep, e)
	}
	f.Failed.Add(int64(len(failed)))
	if len(keep) == 0 {
		return middleware.InitializeOutput{Result: &sqs.SendMessageBatchOutput{Failed: failed}}, middleware.Metadata{}, nil
	}
	cp := *p
	cp.Entries = keep
	in.Parameters = &cp
	out, md, err := next.HandleInitialize(ctx, in)
	if err == nil {
		if r, ok := out.Result.(*sqs.SendMessageBatchOutput); ok {
			r.Failed = append(r.Failed, failed...)
		}
	}
	return out, md, err
}
