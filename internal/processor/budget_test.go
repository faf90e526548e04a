package processor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/inject"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// script is a handler whose runs do what the test says: fail (a retryable
// error of its own) or charge, once, through an at-least-once step with a
// check.
type script struct {
	mu      sync.Mutex
	fail    bool
	charges map[string]int // idempotency key -> charges made
}

func (s *script) handle(ctx context.Context, ev *hookledger.Event) error {
	s.mu.Lock()
	fail := s.fail
	s.mu.Unlock()
	if fail {
		return errors.New("payments API answered 503")
	}
	_, err := ev.Step(ctx, "charge", func(ctx context.Context, key string) (string, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.charges[key]++
		return "ch_1", nil
	}, hookledger.Check(func(ctx context.Context, key string) (string, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.charges[key] > 0 {
			return "ch_1", nil
		}
		return "", hookledger.ErrNotDone
	}))
	return err
}

func (s *script) failing(v bool) {
	s.mu.Lock()
	s.fail = v
	s.mu.Unlock()
}

// runs describes a record's runs for a test's failure message.
func runs(r ledger.Record) string {
	return fmt.Sprintf("%s after %d attempts (%d failed, %d interrupted), last error %q", r.Status, r.Attempts, r.Failures, r.Interrupted, r.LastError)
}

// setupBudget is setupSteps with a stripe/scripted route (MaxAttempts 5,
// the default).
func setupBudget(t *testing.T) (*stepFixture, *script) {
	t.Helper()
	f := setupSteps(t)
	s := &script{charges: map[string]int{}}
	f.r.HandleFunc("stripe", "scripted", s.handle)
	return f, s
}

// crashRun delivers msg with the processor dying right after its claim,
// then lets the dead worker's lease run out.
func (f *stepFixture) crashRun(t *testing.T, msg events.SQSMessage) {
	t.Helper()
	f.mu.Lock()
	f.crash = inject.ProcessorAfterClaim
	f.mu.Unlock()
	if f.deliver(t, msg) {
		t.Fatal("a run that crashed acknowledged its message")
	}
	if f.crash != "" {
		t.Fatal("the crash point was not hit")
	}
	f.clock.Advance(2 * time.Minute)
}

// TestInterruptedRunsDoNotSpendAttempts: six runs killed after their claim
// (the lease of each taken over by the next), a run whose body the ledger
// could not give (the infrastructure's trouble, not the handler's), then
// the handler's own failure, then success. Only the failure is the
// handler's: the event ends done, charged once, with every run accounted
// for. It used to be buried at the failure, on its eighth attempt.
func TestInterruptedRunsDoNotSpendAttempts(t *testing.T) {
	t.Parallel()
	f, s := setupBudget(t)
	const k = "evt_killed_six_times"
	msg := f.message(t, k, "scripted")
	for range 6 {
		f.crashRun(t, msg)
	}
	if rec := f.record(t, k); rec.Status != ledger.Processing || rec.Attempts != 6 || rec.Failures != 0 || rec.Interrupted != 6 {
		t.Fatalf("after six killed runs: %s", runs(rec))
	}
	// A message without its body, and no payload stored yet: the run
	// cannot read the body (the ledger's trouble), and gives the event back.
	omitted, err := queue.Encode(queue.Message{Source: "stripe", Tenant: "acme", ID: k, Type: "scripted", SHA256: "x", BodyOmitted: true})
	if err != nil {
		t.Fatal(err)
	}
	if f.deliver(t, events.SQSMessage{MessageId: "m-omitted", Body: omitted}) {
		t.Fatal("a run without its body acknowledged its message")
	}
	if rec := f.record(t, k); rec.Status != ledger.Failed || rec.Failures != 0 || rec.Interrupted != 7 {
		t.Fatalf("after the run without a body: %s", runs(rec))
	}
	s.failing(true)
	if f.deliver(t, msg) {
		t.Fatal("a failed run acknowledged its message")
	}
	rec := f.record(t, k)
	if rec.Status != ledger.Failed || rec.Attempts != 8 || rec.Failures != 1 {
		t.Fatalf("after the handler's first failure, on the 8th run: %s (want failed, not dead)", runs(rec))
	}
	s.failing(false)
	if !f.deliver(t, msg) {
		t.Fatalf("the last run failed: %s", runs(f.record(t, k)))
	}
	rec = f.record(t, k)
	if rec.Status != ledger.Done || rec.Attempts != 9 || rec.Failures != 1 || rec.Interrupted != 7 {
		t.Fatalf("done record: %s, want 9 attempts: 1 failed, 7 interrupted, 1 done", runs(rec))
	}
	if n := s.charges[key(k, "charge")]; n != 1 {
		t.Fatalf("charged %d times", n)
	}
}

// TestHandlerFailuresSpendAttempts: the handler's own failures still bury
// the event at the fifth (MaxAttempts), however many interrupted runs come
// between them, and the cause says so.
func TestHandlerFailuresSpendAttempts(t *testing.T) {
	t.Parallel()
	f, s := setupBudget(t)
	const k = "evt_fails_five_times"
	msg := f.message(t, k, "scripted")
	s.failing(true)
	for i := 1; i <= 5; i++ {
		f.crashRun(t, msg) // an interruption between the failures, which does not count
		acked := f.deliver(t, msg)
		rec := f.record(t, k)
		if rec.Failures != i || rec.Attempts != 2*i {
			t.Fatalf("failure %d: %s", i, runs(rec))
		}
		if i < 5 && (acked || rec.Status != ledger.Failed) {
			t.Fatalf("failure %d of 5 ended the event: acked %v, %s: %s", i, acked, rec.Status, rec.LastError)
		}
		if i == 5 && (!acked || rec.Status != ledger.Dead) {
			t.Fatalf("the fifth failure did not bury it: acked %v, %s", acked, rec.Status)
		}
		f.clock.Advance(time.Minute)
	}
	rec := f.record(t, k)
	for _, want := range []string{"attempts exhausted", "failed 5 times", "503"} {
		if !strings.Contains(rec.LastError, want) {
			t.Errorf("cause %q does not say %q", rec.LastError, want)
		}
	}
	if rec.Interrupted != 5 {
		t.Errorf("interrupted %d, want the 5 crashed runs", rec.Interrupted)
	}
}

// TestFormat1RecordKeepsItsBudget: a record the code before 0.1.0 failed
// three times (no failures counter: it spent MaxAttempts on every run) has
// two failures left, not a fresh five.
func TestFormat1RecordKeepsItsBudget(t *testing.T) {
	t.Parallel()
	f, s := setupBudget(t)
	const k = "evt_failed_by_older_code"
	msg := f.message(t, k, "scripted")
	// As the older code left it: failed on its third run, no format.
	if _, err := f.db.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
		TableName: aws.String(f.l.Table()), Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: ledger.Key{Source: "stripe", Tenant: "acme", ID: k}.PK()}, "sk": &types.AttributeValueMemberS{Value: "r"}},
		UpdateExpression:          aws.String("SET #st = :failed, attempts = :three REMOVE failures, interrupted, #format, #release"),
		ExpressionAttributeNames:  map[string]string{"#st": "status", "#format": "format", "#release": "release"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":failed": &types.AttributeValueMemberS{Value: "failed"}, ":three": &types.AttributeValueMemberN{Value: "3"}},
	}); err != nil {
		t.Fatal(err)
	}
	s.failing(true)
	for i := 4; i <= 5; i++ {
		acked := f.deliver(t, msg)
		rec := f.record(t, k)
		if rec.Failures != i || (i < 5) != (rec.Status == ledger.Failed) || acked != (i == 5) {
			t.Fatalf("run %d: acked %v, %s; want the fifth failure to bury it", i, acked, runs(rec))
		}
		f.clock.Advance(time.Minute)
	}
	if rec := f.record(t, k); rec.Status != ledger.Dead || !strings.Contains(rec.LastError, "failed 5 times") {
		t.Fatalf("%s, want dead after 5 failures", runs(rec))
	}
}
