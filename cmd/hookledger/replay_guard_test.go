package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// fakeSQS answers GetQueueAttributes from arns (by exact URL) and counts
// the calls that would move messages.
type fakeSQS struct {
	arns  map[string]string
	moves int
}

func (f *fakeSQS) ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.moves++
	return &sqs.ReceiveMessageOutput{}, nil
}

func (f *fakeSQS) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.moves++
	return &sqs.SendMessageOutput{}, nil
}

func (f *fakeSQS) DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	f.moves++
	return &sqs.DeleteMessageOutput{}, nil
}

func (f *fakeSQS) ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	f.moves++
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func (f *fakeSQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	arn, ok := f.arns[*in.QueueUrl]
	if !ok {
		return nil, errors.New("AWS.SimpleQueueService.NonExistentQueue")
	}
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"QueueArn": arn, "ApproximateNumberOfMessages": "0"}}, nil
}

// TestRedriveRefusesTheProcessingQueue: the self-redrive guard compared the
// URLs as strings; another spelling of the processing queue's URL went
// through, and the redrive would have moved the queue into itself.
func TestRedriveRefusesTheProcessingQueue(t *testing.T) {
	t.Parallel()
	const main = "http://localhost:4566/000000000000/hookledger"
	const mainARN = "arn:aws:sqs:us-east-1:000000000000:hookledger"
	for _, tc := range []struct {
		dlq  string
		arns map[string]string
		code int
		want string
	}{
		// Caught by the normalised URL, without a call.
		{main, nil, 2, "is HOOKLEDGER_QUEUE_URL itself"},
		{"HTTP://LocalHost:4566/000000000000/hookledger/", nil, 2, "is HOOKLEDGER_QUEUE_URL itself"},
		// Another host name for the same queue: caught by the ARN.
		{"http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/hookledger",
			map[string]string{main: mainARN, "http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/hookledger": mainARN},
			2, "(both are " + mainARN + ")"},
		// A queue whose ARN cannot be read: refused, it cannot tell.
		{"http://localhost:4566/000000000000/nope", map[string]string{main: mainARN}, 1, "read the ARN of --dlq"},
		{"http://localhost:4566/000000000000/hookledger-dlq", map[string]string{"http://localhost:4566/000000000000/hookledger-dlq": mainARN + "-dlq"}, 1, "read the ARN of HOOKLEDGER_QUEUE_URL"},
	} {
		for _, dry := range []bool{false, true} {
			f := &fakeSQS{arns: tc.arns}
			var out, errb bytes.Buffer
			r := &replayer{sqs: f, queueURL: main, now: time.Now, stdout: &out, stderr: &errb}
			code := r.run(t.Context(), replayOptions{dlq: tc.dlq, dry: dry})
			if code != tc.code || !strings.Contains(errb.String(), tc.want) || f.moves != 0 {
				t.Errorf("--dlq %s (dry %v): exit %d, stderr %q, %d message calls; want %d, %q and none", tc.dlq, dry, code, errb.String(), f.moves, tc.code, tc.want)
			}
		}
	}
	// The real dead-letter queue goes through.
	dlq := "http://localhost:4566/000000000000/hookledger-dlq"
	f := &fakeSQS{arns: map[string]string{main: mainARN, dlq: mainARN + "-dlq"}}
	var out, errb bytes.Buffer
	r := &replayer{sqs: f, queueURL: main, now: time.Now, stdout: &out, stderr: &errb}
	if code := r.run(t.Context(), replayOptions{dlq: dlq}); code != 0 || f.moves == 0 || !strings.Contains(out.String(), "redrove 0 messages") {
		t.Errorf("the DLQ: exit %d, %d message calls, stdout %q, stderr %q; want 0 and a receive", code, f.moves, out.String(), errb.String())
	}
}
