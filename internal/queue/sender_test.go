package queue_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/queue"
)

func TestGroupID(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", queue.MaxGroupIDLen+1)
	for _, tc := range []struct {
		tenant string
		same   bool
	}{
		{"acme", true},
		{"acme-eu_1.prod:x/y", true},
		{`!"#$%&'()*+,-./:;<=>?@[\]^_` + "`{|}~", true},
		{strings.Repeat("a", queue.MaxGroupIDLen), true},
		{long, false},
		{"two words", false},
		{"café", false},
		{"tab\there", false},
	} {
		got := queue.GroupID(tc.tenant)
		if tc.same != (got == tc.tenant) {
			t.Errorf("GroupID(%q) = %q", tc.tenant, got)
		}
		if len(got) == 0 || len(got) > queue.MaxGroupIDLen {
			t.Errorf("GroupID(%q) = %q: %d characters", tc.tenant, got, len(got))
		}
		for _, c := range []byte(got) {
			if c < '!' || c > '~' {
				t.Errorf("GroupID(%q) = %q carries %q, which SQS refuses", tc.tenant, got, c)
			}
		}
		if again := queue.GroupID(tc.tenant); again != got {
			t.Errorf("GroupID(%q) is not stable: %q then %q", tc.tenant, got, again)
		}
	}
	if queue.GroupID("café") == queue.GroupID("cafe\u0301") {
		t.Error("two different tenants share a digest group")
	}
}

type sqsFixture struct {
	sqs   *sqs.Client
	url   string
	meter *awstest.Meter
	snd   *queue.BatchSender
}

func setupSQS(t *testing.T, opts ...func(*middleware.Stack) error) *sqsFixture {
	t.Helper()
	m := awstest.NewMeter()
	cfg := awstest.Config(t, append([]func(*middleware.Stack) error{m.APIOption}, opts...)...)
	url, _ := awstest.Queues(t, cfg, queue.QueueSpec{})
	raw := sqs.NewFromConfig(awstest.Config(t))
	return &sqsFixture{sqs: raw, url: url, meter: m, snd: &queue.BatchSender{API: sqs.NewFromConfig(cfg), URL: url}}
}

// received takes every message off the queue and returns each one's key
// and message group.
func (f *sqsFixture) received(t *testing.T) map[string]string {
	t.Helper()
	got := map[string]string{}
	for empty := 0; empty < 2; {
		out, err := f.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &f.url, MaxNumberOfMessages: 10, VisibilityTimeout: 60,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range out.Messages {
			msg, err := queue.Decode(aws.ToString(m.Body))
			if err != nil {
				t.Fatal(err)
			}
			if _, dup := got[msg.ID]; dup {
				// SQS is at least once: when the emulator cuts an answer
				// short, the SDK sends the batch again and its entries
				// arrive twice; the processor's lease absorbs that. Only a
				// duplicate no retry explains is the sender's fault.
				if r := f.meter.Retries(); r["SQS.SendMessageBatch"]+r["SQS.SendMessage"] == 0 {
					t.Errorf("%s queued twice without a retried send", msg.ID)
				} else {
					t.Logf("%s queued twice after the SDK retried a send whose answer was lost", msg.ID)
				}
			}
			got[msg.ID] = m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		}
	}
	return got
}

func TestSendCarriesTheTenantAsMessageGroup(t *testing.T) {
	t.Parallel()
	f := setupSQS(t)
	odd := "tenant with spaces and ünïcode"
	if err := f.snd.Send(t.Context(), queue.Message{Source: "stripe", Tenant: "acme", ID: "evt_single"}); err != nil {
		t.Fatal(err)
	}
	errs := f.snd.SendBatch(t.Context(), []queue.Message{
		{Source: "stripe", Tenant: "globex", ID: "evt_batch_1"},
		{Source: "stripe", Tenant: odd, ID: "evt_batch_2"},
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	got := f.received(t)
	want := map[string]string{"evt_single": "acme", "evt_batch_1": "globex", "evt_batch_2": queue.GroupID(odd)}
	for k, g := range want {
		if got[k] != g {
			t.Errorf("%s arrived with message group %q, want %q (all: %v)", k, got[k], g, got)
		}
	}
}

func TestSendBatchSendsTenAPerCall(t *testing.T) {
	t.Parallel()
	f := setupSQS(t)
	msgs := make([]queue.Message, 23)
	for i := range msgs {
		msgs[i] = queue.Message{Source: "stripe", Tenant: "acme", ID: fmt.Sprintf("evt_%02d", i), Body: []byte(`{"n":1}`)}
	}
	for i, err := range f.snd.SendBatch(t.Context(), msgs) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if calls := f.meter.Snapshot()["SQS.SendMessageBatch"]; calls != 3 {
		t.Errorf("23 messages took %d SendMessageBatch calls, want 3", calls)
	}
	if got := f.received(t); len(got) != 23 {
		t.Errorf("%d of 23 messages queued", len(got))
	}
}

func TestSendBatchSplitsByTotalSize(t *testing.T) {
	t.Parallel()
	f := setupSQS(t)
	random := func(int) []byte { // incompressible: base64 in the message makes it ~100 KB
		b := make([]byte, 75*1024)
		rand.Read(b)
		return b
	}
	msgs := make([]queue.Message, 5)
	for i := range msgs {
		msgs[i] = queue.Message{Source: "s", Tenant: "t", ID: fmt.Sprintf("big_%d", i), Body: random(i)}
	}
	for i, err := range f.snd.SendBatch(t.Context(), msgs) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	// ~100 KB each: two fit in 256 KiB, so 5 take 3 calls.
	if calls := f.meter.Snapshot()["SQS.SendMessageBatch"]; calls != 3 {
		t.Errorf("5 messages of ~100 KB took %d calls, want 3", calls)
	}
	if got := f.received(t); len(got) != 5 {
		t.Errorf("%d of 5 messages queued", len(got))
	}
}

func TestSendBatchReportsEachFailedEntry(t *testing.T) {
	t.Parallel()
	for _, senderFault := range []bool{false, true} {
		t.Run(fmt.Sprintf("sender_fault=%v", senderFault), func(t *testing.T) {
			t.Parallel()
			inj := &awstest.BatchEntryFailures{Fail: func(body string) bool { return strings.Contains(body, `"evt_fail`) }, SenderFault: senderFault}
			f := setupSQS(t, inj.APIOption)
			keys := []string{"evt_ok_1", "evt_fail_1", "evt_ok_2", "evt_fail_2", "evt_ok_3"}
			msgs := make([]queue.Message, len(keys))
			for i, k := range keys {
				msgs[i] = queue.Message{Source: "stripe", Tenant: "acme", ID: k}
			}
			errs := f.snd.SendBatch(t.Context(), msgs)
			want := queue.ErrNotSent
			if senderFault {
				want = queue.ErrRejected
			}
			for i, k := range keys {
				failed := strings.HasPrefix(k, "evt_fail")
				if failed && !errors.Is(errs[i], want) || !failed && errs[i] != nil {
					t.Errorf("%s: %v", k, errs[i])
				}
			}
			got := f.received(t)
			if len(got) != 3 || got["evt_fail_1"] != "" || got["evt_fail_2"] != "" {
				t.Errorf("queued %v; want the three ok entries only", got)
			}
		})
	}
}

func TestSendBatchWholeCallFailureIsUnknown(t *testing.T) {
	t.Parallel()
	f := setupSQS(t)
	snd := &queue.BatchSender{API: f.snd.API, URL: f.url + "-no-such-queue"}
	errs := snd.SendBatch(t.Context(), []queue.Message{{Source: "s", Tenant: "t", ID: "k1"}, {Source: "s", Tenant: "t", ID: "k2"}})
	for i, err := range errs {
		if !errors.Is(err, queue.ErrUnavailable) {
			t.Errorf("entry %d: %v, want ErrUnavailable", i, err)
		}
	}
}

func TestDepthCountsWaitingMessages(t *testing.T) {
	t.Parallel()
	f := setupSQS(t)
	if n, taken, err := f.snd.Depth(t.Context()); err != nil || n != 0 || taken != 0 {
		t.Fatalf("empty queue: depth %d, in flight %d, %v", n, taken, err)
	}
	msgs := make([]queue.Message, 7)
	for i := range msgs {
		msgs[i] = queue.Message{Source: "s", Tenant: "t", ID: fmt.Sprintf("k%d", i)}
	}
	f.snd.SendBatch(t.Context(), msgs)
	if n, taken, err := f.snd.Depth(t.Context()); err != nil || n != 7 || taken != 0 {
		t.Fatalf("depth %d, in flight %d, %v; want 7 and 0", n, taken, err)
	}
	// In-flight messages are not waiting: a new event does not queue behind them.
	if _, err := f.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &f.url, MaxNumberOfMessages: 3, VisibilityTimeout: 60}); err != nil {
		t.Fatal(err)
	}
	if n, taken, err := f.snd.Depth(t.Context()); err != nil || n != 4 || taken != 3 {
		t.Fatalf("depth %d, in flight %d, %v after 3 were received; want 4 and 3", n, taken, err)
	}
}

// TestEmulatorHasNoFairQueues pins what lab/docs/emulator.md says about the
// emulator: it keeps each message's group but delivers a standard queue in
// send order. With 40 of a noisy tenant's messages in flight (over 10% of
// the in-flight messages and at least 30 of its own), AWS fair queues would
// hand the quiet tenant's waiting message out next; MiniStack hands out the
// noisy tenant's next ten. If this fails, the emulator has learnt fair
// queues: update the doc.
func TestEmulatorHasNoFairQueues(t *testing.T) {
	t.Parallel()
	f := setupSQS(t)
	var msgs []queue.Message
	for i := range 60 {
		msgs = append(msgs, queue.Message{Source: "s", Tenant: "noisy", ID: fmt.Sprintf("noisy_%02d", i)})
	}
	msgs = append(msgs, queue.Message{Source: "s", Tenant: "quiet", ID: "quiet_0"})
	for i, err := range f.snd.SendBatch(t.Context(), msgs) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	receive := func() []types.Message {
		out, err := f.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &f.url, MaxNumberOfMessages: 10, VisibilityTimeout: 60,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	for range 4 { // 40 of the noisy tenant's messages in flight
		for _, m := range receive() {
			if g := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]; g != "noisy" {
				t.Fatalf("group %q among the first 40", g)
			}
		}
	}
	var groups []string
	for _, m := range receive() {
		groups = append(groups, m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)])
	}
	for _, g := range groups {
		if g != "noisy" {
			t.Fatalf("the emulator handed out %v next: it prioritises quiet tenants now (fair queues); update lab/docs/emulator.md", groups)
		}
	}
	t.Logf("with 40 noisy messages in flight the emulator hands out %v next; AWS fair queues would prefer the quiet tenant", groups)
}
