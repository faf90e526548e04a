package forward_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/forward"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/source"
)

var at = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func event(detail string) engine.Forwarded {
	return engine.Forwarded{Source: "stripe", Tenant: "acme", ID: "evt_1", Type: "invoice.paid", Key: "hl_0123456789abcdef0123456789abcdef01234567",
		Attempt: 1, ReceivedAt: at, Detail: []byte(detail)}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	src, dt, detail, err := forward.Build(event(`{"id":"evt_1","amount":5}`))
	if err != nil || src != "hookledger.stripe" || dt != "invoice.paid" {
		t.Fatalf("%q %q %v", src, dt, err)
	}
	var d forward.Detail
	if err := json.Unmarshal(detail, &d); err != nil {
		t.Fatal(err)
	}
	want := forward.Identity{Source: "stripe", Tenant: "acme", EventID: "evt_1", Type: "invoice.paid", Key: event("").Key, Attempt: 1, ReceivedAt: at}
	if d.Hookledger != want || string(d.Event) != `{"id":"evt_1","amount":5}` {
		t.Errorf("detail %s", detail)
	}
	// A body that is not JSON (a form-encoded webhook) rides as a string.
	_, _, detail, err = forward.Build(event(`a=1&b=2`))
	if err != nil || !strings.Contains(string(detail), `"event":"a=1\u0026b=2"`) {
		t.Errorf("%s %v", detail, err)
	}
	// An entry EventBridge would refuse is a permanent error that says what
	// to do, before any request.
	_, _, _, err = forward.Build(event(`"` + strings.Repeat("x", forward.MaxEntryBytes) + `"`))
	if !engine.IsPermanent(err) || !strings.Contains(err.Error(), "forward the part of the event") {
		t.Errorf("oversized: %v", err)
	}
}

type refusing struct{}

func (refusing) PutEvents(context.Context, *eventbridge.PutEventsInput, ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	return &eventbridge.PutEventsOutput{FailedEntryCount: 1, Entries: []ebtypes.PutEventsResultEntry{{ErrorCode: aws.String("ThrottlingException"), ErrorMessage: aws.String("slow down")}}}, nil
}

// An entry the bus refuses is an error the step retries, naming the code.
func TestPublishRefusedEntryIsRetried(t *testing.T) {
	t.Parallel()
	_, err := (&forward.Publisher{API: refusing{}, Bus: "out"}).Publish(t.Context(), event(`{}`))
	if err == nil || engine.IsPermanent(err) || !strings.Contains(err.Error(), "ThrottlingException") {
		t.Errorf("%v", err)
	}
}

// Against the emulator: a published event reaches a rule's SQS target on
// the bus, with the ledger's identity in its detail.
func TestPublishReachesTheBus(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	eb := eventbridge.NewFromConfig(cfg)
	sq := sqs.NewFromConfig(cfg)
	bus := awstest.Name("hl-out")
	if _, err := eb.CreateEventBus(t.Context(), &eventbridge.CreateEventBusInput{Name: &bus}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eb.DeleteEventBus(context.Background(), &eventbridge.DeleteEventBusInput{Name: &bus}) })
	target, _ := awstest.Queues(t, cfg, queue.QueueSpec{})
	attrs, err := sq.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: &target, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	rule := "forwarded"
	if _, err := eb.PutRule(t.Context(), &eventbridge.PutRuleInput{Name: &rule, EventBusName: &bus,
		EventPattern: aws.String(`{"source":[{"prefix":"` + source.ForwardPrefix + `"}]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := eb.PutTargets(t.Context(), &eventbridge.PutTargetsInput{Rule: &rule, EventBusName: &bus,
		Targets: []ebtypes.Target{{Id: aws.String("q"), Arn: aws.String(attrs.Attributes["QueueArn"])}}}); err != nil {
		t.Fatal(err)
	}
	id, err := (&forward.Publisher{API: eb, Bus: bus}).Publish(t.Context(), event(`{"id":"evt_1"}`))
	if err != nil || id == "" {
		t.Fatalf("%q %v", id, err)
	}
	bodies := awstest.Drain(t, sq, target)
	if len(bodies) != 1 {
		t.Fatalf("%d events on the target, want 1", len(bodies))
	}
	var got struct {
		ID         string         `json:"id"`
		Source     string         `json:"source"`
		DetailType string         `json:"detail-type"`
		Detail     forward.Detail `json:"detail"`
	}
	if err := json.Unmarshal([]byte(bodies[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != id || got.Source != "hookledger.stripe" || got.DetailType != "invoice.paid" || got.Detail.Hookledger.Key != event("").Key || got.Detail.Hookledger.EventID != "evt_1" {
		t.Errorf("on the bus: %s", bodies[0])
	}
	if _, err := (&forward.Publisher{API: eb, Bus: "arn:aws:s3:::not-a-bus"}).Publish(t.Context(), event(`{}`)); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("a bad bus: %v", err)
	}
}
