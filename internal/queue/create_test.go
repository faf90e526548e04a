package queue

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// adminFake records the queues CreateQueues asks for.
type adminFake struct{ created []*sqs.CreateQueueInput }

func (f *adminFake) CreateQueue(_ context.Context, in *sqs.CreateQueueInput, _ ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error) {
	f.created = append(f.created, in)
	return &sqs.CreateQueueOutput{QueueUrl: aws.String("http://sqs.local/000000000000/" + aws.ToString(in.QueueName))}, nil
}

func (f *adminFake) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"QueueArn": "arn:aws:sqs:us-east-1:000000000000:x-dlq"}}, nil
}

// TestCreateQueuesRefusesOutOfRange: a spec SQS would refuse (or that the
// old code silently replaced) creates nothing, not even the DLQ.
func TestCreateQueuesRefusesOutOfRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec QueueSpec
		want string
	}{
		{QueueSpec{Name: "q", VisibilityTimeout: -1}, "visibility timeout -1"},
		{QueueSpec{Name: "q", VisibilityTimeout: 43201}, "visibility timeout 43201"},
		{QueueSpec{Name: "q", MaxReceiveCount: -1}, "max receive count -1"},
		{QueueSpec{Name: "q", MaxReceiveCount: 1001}, "max receive count 1001"},
		{QueueSpec{Name: ""}, "queue name"},
		{QueueSpec{Name: "has space"}, "queue name"},
		{QueueSpec{Name: "x.fifo"}, "queue name"},
		{QueueSpec{Name: strings.Repeat("q", MaxQueueNameLen+1)}, "queue name"},
	} {
		f := &adminFake{}
		_, _, err := CreateQueues(t.Context(), f, tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want an error about %q", tc.spec, err, tc.want)
		}
		if len(f.created) != 0 {
			t.Errorf("%+v: created %d queues; want none", tc.spec, len(f.created))
		}
	}
}

// TestCreateQueuesDefaultsAndLimits: zero takes the documented defaults;
// the limits themselves are accepted as given.
func TestCreateQueuesDefaultsAndLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec             QueueSpec
		vis, maxReceives string
	}{
		{QueueSpec{Name: "q"}, "30", "5"},
		{QueueSpec{Name: "q", VisibilityTimeout: 1, MaxReceiveCount: 1}, "1", "1"},
		{QueueSpec{Name: strings.Repeat("q", MaxQueueNameLen), VisibilityTimeout: 43200, MaxReceiveCount: 1000}, "43200", "1000"},
	} {
		f := &adminFake{}
		if _, _, err := CreateQueues(t.Context(), f, tc.spec); err != nil {
			t.Fatalf("%+v: %v", tc.spec, err)
		}
		if len(f.created) != 2 {
			t.Fatalf("%+v: %d queues created, want 2", tc.spec, len(f.created))
		}
		main := f.created[1].Attributes
		var redrive map[string]string
		json.Unmarshal([]byte(main["RedrivePolicy"]), &redrive)
		if main["VisibilityTimeout"] != tc.vis || redrive["maxReceiveCount"] != tc.maxReceives {
			t.Errorf("%+v: visibility %s, maxReceiveCount %s; want %s and %s", tc.spec, main["VisibilityTimeout"], redrive["maxReceiveCount"], tc.vis, tc.maxReceives)
		}
	}
}
