package units

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
)

// SQSChunk is the payload size billed as one SQS request: "each 64 KB chunk
// of a payload is billed as 1 request" (https://aws.amazon.com/sqs/pricing/).
const SQSChunk = 64 * 1024

// Usage is what a stretch of work consumed.
type Usage struct {
	WCU      float64 // table write units
	IndexWCU float64 // global secondary index write units
	RCU      float64 // read units
	SQS      float64 // SQS billed requests (64 KB chunks)
	// Written is the largest item size (bytes) each successful write left,
	// in order, e.g. the record, then the payload.
	Written []int
}

// Add sums u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{WCU: u.WCU + v.WCU, IndexWCU: u.IndexWCU + v.IndexWCU, RCU: u.RCU + v.RCU, SQS: u.SQS + v.SQS,
		Written: append(append([]int{}, u.Written...), v.Written...)}
}

// Getter reads items back without being metered: the accountant's before
// and after images.
type Getter interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Accountant is SDK middleware that prices every DynamoDB and SQS request a
// client sends by the billing rules of this package. For writes it reads
// the item before and after through Raw (a client without the accountant),
// so it is meant for sequential accounting runs, not for timing.
type Accountant struct {
	Raw    Getter
	Tables map[string]TableSpec // by table name

	mu sync.Mutex
	u  Usage
}

// APIOption installs the accountant on a client.
func (a *Accountant) APIOption(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("hookledger.bench.units", a.handle), middleware.After)
}

// Take returns what was consumed since the last Take and starts over.
func (a *Accountant) Take() Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.u
	a.u = Usage{}
	return u
}

func (a *Accountant) add(u Usage) {
	a.mu.Lock()
	a.u = a.u.Add(u)
	a.mu.Unlock()
}

func (a *Accountant) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	switch p := in.Parameters.(type) {
	case *dynamodb.PutItemInput:
		t := a.Tables[aws.ToString(p.TableName)]
		return a.write(ctx, in, next, aws.ToString(p.TableName), t, keyOf(t, p.Item), p.Item)
	case *dynamodb.UpdateItemInput:
		t := a.Tables[aws.ToString(p.TableName)]
		return a.write(ctx, in, next, aws.ToString(p.TableName), t, p.Key, nil)
	case *dynamodb.DeleteItemInput:
		t := a.Tables[aws.ToString(p.TableName)]
		return a.write(ctx, in, next, aws.ToString(p.TableName), t, p.Key, nil)
	}
	out, md, err := next.HandleInitialize(ctx, in)
	if err != nil {
		return out, md, err
	}
	var u Usage
	switch r := out.Result.(type) {
	case *dynamodb.GetItemOutput:
		consistent := false
		if p, ok := in.Parameters.(*dynamodb.GetItemInput); ok {
			consistent = aws.ToBool(p.ConsistentRead)
		}
		u.RCU = ReadUnits(ItemSize(r.Item), consistent)
	case *dynamodb.QueryOutput:
		consistent := false
		if p, ok := in.Parameters.(*dynamodb.QueryInput); ok {
			consistent = aws.ToBool(p.ConsistentRead)
		}
		u.RCU = ReadUnits(sumSizes(r.Items), consistent)
	case *dynamodb.BatchGetItemOutput:
		// Each item is billed as its own GetItem: rounded up to 4 KB one by one.
		p, _ := in.Parameters.(*dynamodb.BatchGetItemInput)
		for table, items := range r.Responses {
			consistent := false
			if p != nil {
				consistent = aws.ToBool(p.RequestItems[table].ConsistentRead)
			}
			for _, it := range items {
				u.RCU += ReadUnits(ItemSize(it), consistent)
			}
		}
	case *dynamodb.ScanOutput:
		consistent := false
		if p, ok := in.Parameters.(*dynamodb.ScanInput); ok {
			consistent = aws.ToBool(p.ConsistentRead)
		}
		u.RCU = ReadUnits(sumSizes(r.Items), consistent)
	case *sqs.SendMessageOutput:
		p, _ := in.Parameters.(*sqs.SendMessageInput)
		u.SQS = SQSRequests(len(aws.ToString(p.MessageBody)))
	case *sqs.SendMessageBatchOutput:
		p, _ := in.Parameters.(*sqs.SendMessageBatchInput)
		n := 0
		for _, e := range p.Entries {
			n += len(aws.ToString(e.MessageBody))
		}
		u.SQS = SQSRequests(n)
	case *sqs.ReceiveMessageOutput:
		n := 0
		for _, m := range r.Messages {
			n += len(aws.ToString(m.Body))
		}
		u.SQS = SQSRequests(n)
	default:
		if isSQS(in.Parameters) {
			u.SQS = 1
		}
	}
	a.add(u)
	return out, md, err
}

// SQSRequests is the billed requests of one call carrying n payload bytes.
func SQSRequests(n int) float64 { return float64(max(1, (n+SQSChunk-1)/SQSChunk)) }

func isSQS(p any) bool {
	switch p.(type) {
	case *sqs.DeleteMessageInput, *sqs.DeleteMessageBatchInput, *sqs.ChangeMessageVisibilityInput, *sqs.GetQueueAttributesInput:
		return true
	}
	return false
}

func (a *Accountant) write(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler, table string, t TableSpec, key, attempted map[string]types.AttributeValue) (middleware.InitializeOutput, middleware.Metadata, error) {
	before := a.get(ctx, table, key)
	out, md, err := next.HandleInitialize(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		existing := before
		if ccf.Item != nil {
			existing = ccf.Item
		}
		if attempted == nil {
			attempted = existing
		}
		w := FailedWriteCost(existing, attempted)
		a.add(Usage{WCU: w.Table})
	case err == nil:
		after := a.get(ctx, table, key)
		w := t.WriteCost(before, after, false)
		a.add(Usage{WCU: w.Table, IndexWCU: w.Index, Written: []int{max(ItemSize(before), ItemSize(after))}})
	}
	return out, md, err
}

func (a *Accountant) get(ctx context.Context, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	if len(key) == 0 {
		return nil
	}
	out, err := a.Raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil
	}
	return out.Item
}

func keyOf(t TableSpec, item map[string]types.AttributeValue) map[string]types.AttributeValue {
	k := map[string]types.AttributeValue{}
	for _, name := range t.Keys {
		if v, ok := item[name]; ok {
			k[name] = v
		}
	}
	return k
}

func sumSizes(items []map[string]types.AttributeValue) int {
	n := 0
	for _, it := range items {
		n += ItemSize(it)
	}
	return n
}
