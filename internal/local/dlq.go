package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// queueAttrAPI is the slice of SQS DeadLetterQueueURL calls.
type queueAttrAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, opts ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

var _ queueAttrAPI = (*sqs.Client)(nil)

// ErrNoDeadLetterQueue: the queue's redrive policy names no dead-letter queue.
var ErrNoDeadLetterQueue = errors.New("no dead-letter queue")

// DeadLetterQueueURL finds queueURL's dead-letter queue from its redrive
// policy: without it, a local reclaimer would never take back the bodies
// only the DLQ holds. A queue with no policy is an error naming the fix.
func DeadLetterQueueURL(ctx context.Context, api queueAttrAPI, queueURL string) (string, error) {
	out, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy}})
	if err != nil {
		return "", fmt.Errorf("read the redrive policy of HOOKLEDGER_QUEUE_URL=%s: %w", queueURL, err)
	}
	noDLQ := fmt.Errorf("%w: the queue HOOKLEDGER_QUEUE_URL=%s has no RedrivePolicy, so a message the processor keeps failing would be dropped rather than kept: create the queues with `hookledger setup` (its NAME-dlq is the dead-letter queue), or give the queue a redrive policy and set HOOKLEDGER_DLQ_URL to that queue's URL", ErrNoDeadLetterQueue, queueURL)
	raw := out.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)]
	if raw == "" {
		return "", noDLQ
	}
	var policy struct {
		Target string `json:"deadLetterTargetArn"`
	}
	if err := json.Unmarshal([]byte(raw), &policy); err != nil || policy.Target == "" {
		return "", fmt.Errorf("%w (its RedrivePolicy %q names no deadLetterTargetArn)", noDLQ, raw)
	}
	// arn:PARTITION:sqs:REGION:ACCOUNT:NAME
	parts := strings.Split(policy.Target, ":")
	if len(parts) != 6 || parts[2] != "sqs" || parts[5] == "" {
		return "", fmt.Errorf("%w: the redrive policy of HOOKLEDGER_QUEUE_URL=%s names %q, which is not an SQS queue ARN; set HOOKLEDGER_DLQ_URL to the dead-letter queue's URL", ErrNoDeadLetterQueue, queueURL, policy.Target)
	}
	in := &sqs.GetQueueUrlInput{QueueName: aws.String(parts[5])}
	if parts[4] != "" {
		in.QueueOwnerAWSAccountId = aws.String(parts[4])
	}
	u, err := api.GetQueueUrl(ctx, in)
	if err != nil {
		return "", fmt.Errorf("find the dead-letter queue %s that HOOKLEDGER_QUEUE_URL=%s redrives to: %w (was it deleted? `hookledger setup` creates both)", policy.Target, queueURL, err)
	}
	return aws.ToString(u.QueueUrl), nil
}
