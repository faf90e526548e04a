package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// AdminAPI is what CreateQueues needs.
type AdminAPI interface {
	CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, opts ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// QueueSpec describes the queue pair CreateQueues makes.
type QueueSpec struct {
	// Name is the processing queue's name; its DLQ is Name-dlq. Letters,
	// digits, '-' and '_', at most MaxQueueNameLen characters.
	Name string
	// VisibilityTimeout is in seconds, 1 to MaxVisibilityTimeout; keep it at
	// least 6x the processor timeout. 0 means DefaultVisibilityTimeout.
	VisibilityTimeout int
	// MaxReceiveCount is the deliveries before a message moves to the DLQ,
	// 1 to MaxMaxReceiveCount. 0 means DefaultMaxReceiveCount.
	MaxReceiveCount int
}

// The limits and zero-value defaults of a QueueSpec.
const (
	// MaxQueueNameLen leaves room for the DLQ's "-dlq" within SQS's 80
	// characters.
	MaxQueueNameLen          = 80 - len("-dlq")
	MaxVisibilityTimeout     = 43200 // SQS's maximum, 12 hours
	MaxMaxReceiveCount       = 1000  // SQS's maximum in a redrive policy
	DefaultVisibilityTimeout = 30
	DefaultMaxReceiveCount   = 5
)

// ValidQueueName reports whether SQS accepts name, and name-dlq, as the name
// of a standard queue.
func ValidQueueName(name string) bool {
	if name == "" || len(name) > MaxQueueNameLen {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Validate reports what SQS would refuse in the spec, before anything is
// created. Zero values stand for the defaults.
func (spec QueueSpec) Validate() error {
	switch {
	case !ValidQueueName(spec.Name):
		return fmt.Errorf("queue name %q: want 1 to %d letters, digits, '-' or '_'", spec.Name, MaxQueueNameLen)
	case spec.VisibilityTimeout < 0 || spec.VisibilityTimeout > MaxVisibilityTimeout:
		return fmt.Errorf("visibility timeout %d s: want 1 to %d (0: %d)", spec.VisibilityTimeout, MaxVisibilityTimeout, DefaultVisibilityTimeout)
	case spec.MaxReceiveCount < 0 || spec.MaxReceiveCount > MaxMaxReceiveCount:
		return fmt.Errorf("max receive count %d: want 1 to %d (0: %d)", spec.MaxReceiveCount, MaxMaxReceiveCount, DefaultMaxReceiveCount)
	}
	return nil
}

// CreateQueues creates name-dlq and name with a redrive policy to it, for
// local runs and tests (in AWS the SAM template owns them). It returns both
// URLs. A zero VisibilityTimeout or MaxReceiveCount takes the default; a
// spec that Validate refuses creates nothing and returns its error.
func CreateQueues(ctx context.Context, api AdminAPI, spec QueueSpec) (queueURL, dlqURL string, err error) {
	if err := spec.Validate(); err != nil {
		return "", "", fmt.Errorf("create queues: %w", err)
	}
	if spec.VisibilityTimeout == 0 {
		spec.VisibilityTimeout = DefaultVisibilityTimeout
	}
	if spec.MaxReceiveCount == 0 {
		spec.MaxReceiveCount = DefaultMaxReceiveCount
	}
	size := strconv.Itoa(MaxMessageBytes) // SQS's default is 256 KiB on AWS
	dlq, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(spec.Name + "-dlq"),
		Attributes: map[string]string{"MessageRetentionPeriod": "1209600", "MaximumMessageSize": size}})
	if err != nil {
		return "", "", fmt.Errorf("create queue %s-dlq: %w", spec.Name, err)
	}
	attrs, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", "", fmt.Errorf("read %s-dlq arn: %w", spec.Name, err)
	}
	redrive, _ := json.Marshal(map[string]string{
		"deadLetterTargetArn": attrs.Attributes["QueueArn"],
		"maxReceiveCount":     strconv.Itoa(spec.MaxReceiveCount),
	})
	q, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(spec.Name), Attributes: map[string]string{
		"VisibilityTimeout":      strconv.Itoa(spec.VisibilityTimeout),
		"RedrivePolicy":          string(redrive),
		"MessageRetentionPeriod": "1209600",
		"MaximumMessageSize":     size,
	}})
	if err != nil {
		return "", "", fmt.Errorf("create queue %s: %w", spec.Name, err)
	}
	return *q.QueueUrl, *dlq.QueueUrl, nil
}
