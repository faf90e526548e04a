package bus

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// The message attributes a parked event carries on the dead-letter queue.
const (
	AttrReason      = "hookledger-parked"             // why the event was parked
	AttrEventSource = "hookledger-eventbridge-source" // the event's EventBridge source
	AttrSource      = "hookledger-source"             // the hookledger source that took it, if one did
)

// maxReason bounds a reason in a message attribute.
const maxReason = 1024

// sendAPI is the slice of SQS the parking calls.
type sendAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Parking parks intake messages on the bus's dead-letter queue, the reason in attributes.
type Parking struct {
	API sendAPI
	URL string
}

// Park sends body to the dead-letter queue.
func (p *Parking) Park(ctx context.Context, body, reason string, attrs map[string]string) error {
	ma := map[string]types.MessageAttributeValue{AttrReason: {DataType: aws.String("String"), StringValue: aws.String(attrText(reason))}}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ma[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(attrText(attrs[k]))}
	}
	if _, err := p.API.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &p.URL, MessageBody: &body, MessageAttributes: ma}); err != nil {
		return fmt.Errorf("park on %s: %w", p.URL, err)
	}
	return nil
}

// attrText makes s a message attribute SQS takes (a reason quotes what the
// event carried): valid UTF-8, no control characters, not empty, bounded.
func attrText(s string) string {
	if len(s) > maxReason {
		s = s[:maxReason]
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0xfffe || r == 0xffff {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	return cmp.Or(s, "-")
}
