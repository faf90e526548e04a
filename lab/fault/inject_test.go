package fault

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "dynamodb.throttle=0.05,dynamodb.500=0.03,dynamodb.timeout=0.02,dynamodb.timeout_after_write=0.03,sqs.500=0.03,sqs.timeout_after_write=0.02,seed=42",
			want: "dynamodb.500=0.03,dynamodb.throttle=0.05,dynamodb.timeout=0.02,dynamodb.timeout_after_write=0.03,sqs.500=0.03,sqs.timeout_after_write=0.02,seed=42"},
		{in: " SQS.Throttle = 1 ", want: "sqs.throttle=1"},
		{in: "*.timeout=0.5", want: "*.timeout=0.5"},
		{in: "", want: ""},
		{in: "dynamodb.slow=0.1", err: "kind one of"},
		{in: "dynamodb.throttle", err: "want service.kind=share"},
		{in: "dynamodb.throttle=2", err: "between 0 and 1"},
		{in: "dynamodb.throttle=0.6,dynamodb.500=0.6", err: "more than 1"},
		{in: "seed=x", err: "non-negative integer"},
		{in: ".500=0.1", err: "kind one of"},
	} {
		sp, err := parse(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parse(%q) = %v, want error containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parse(%q): %v", tc.in, err)
			continue
		}
		if got := sp.String(); got != tc.want {
			t.Errorf("parse(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRandomShares(t *testing.T) {
	t.Parallel()
	sp, err := parse("dynamodb.throttle=0.1,dynamodb.timeout_after_write=0.2,seed=7")
	if err != nil {
		t.Fatal(err)
	}
	in := newInjector(sp)
	counts := map[string]int{}
	const n = 20000
	for range n {
		counts[in.decide("dynamodb", "PutItem")]++
		if k := in.decide("sqs", "SendMessage"); k != "" {
			t.Fatalf("sqs has no rule but got %q", k)
		}
	}
	near := func(kind string, want float64) {
		got := float64(counts[kind]) / n
		if got < want-0.02 || got > want+0.02 {
			t.Errorf("%s share %.3f, want about %.2f", kind, got, want)
		}
	}
	near(Throttle, 0.1)
	near(TimeoutAfterWrite, 0.2)
	near("", 0.7)
	// The same seed makes the same choices.
	a, b := newInjector(sp), newInjector(sp)
	for range 100 {
		if a.decide("dynamodb", "x") != b.decide("dynamodb", "x") {
			t.Fatal("same seed, different choices")
		}
	}
}

// script injects kind on the first n attempts of every call and counts
// attempts per operation.
type script struct {
	mu       sync.Mutex
	kind     string
	first    int
	attempts map[string]int
}

func (s *script) injector() *injector {
	in := newInjector(spec{})
	in.report = func(string, string, string) {}
	in.decide = func(service, op string) string {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.attempts[op]++
		if s.first < 0 || s.attempts[op] <= s.first {
			return s.kind
		}
		return ""
	}
	return in
}

func (s *script) count(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts[op]
}

// clients returns DynamoDB and SQS clients on the emulator with kind
// injected on the first `first` attempts of each operation (-1: every
// attempt), the emulator's clean clients, a table and a queue.
func clients(t *testing.T, kind string, first int) (*script, *dynamodb.Client, *sqs.Client, *dynamodb.Client, *sqs.Client, string, string) {
	t.Helper()
	clean := awstest.Config(t)
	table := awstest.Table(t, clean)
	qurl, _ := awstest.Queues(t, clean, queue.QueueSpec{Name: awstest.Name("chaos-fault")})
	s := &script{kind: kind, first: first, attempts: map[string]int{}}
	faulty := awstest.Config(t, s.injector().add)
	return s, dynamodb.NewFromConfig(faulty), sqs.NewFromConfig(faulty), dynamodb.NewFromConfig(clean), sqs.NewFromConfig(clean), table, qurl
}

func item(pk string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		"pk": &ddbtypes.AttributeValueMemberS{Value: pk}, "sk": &ddbtypes.AttributeValueMemberS{Value: "r"},
	}
}

// TestRetryerGivesUp: a fault on every attempt is retried by the SDK's own
// retryer up to its attempt limit and surfaces as the error type a real one
// would.
func TestRetryerGivesUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind  string
		check func(error) bool
	}{
		{Throttle, func(err error) bool {
			var a *ddbtypes.ThrottlingException
			var b *ddbtypes.ProvisionedThroughputExceededException
			return errors.As(err, &a) || errors.As(err, &b)
		}},
		{Internal, func(err error) bool {
			var e *ddbtypes.InternalServerError
			var re *smithyhttp.ResponseError
			return errors.As(err, &e) && errors.As(err, &re) && re.HTTPStatusCode() == 500
		}},
		{Timeout, isTimeout},
		{TimeoutAfterWrite, isTimeout},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			s, db, _, clean, _, table, _ := clients(t, tc.kind, -1)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			pk := "fault#" + tc.kind
			_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item(pk)})
			if err == nil || !tc.check(err) {
				t.Fatalf("PutItem error = %v; want the injected %s", err, tc.kind)
			}
			max := db.Options().Retryer.MaxAttempts()
			if got := s.count("PutItem"); got != max || max < 2 {
				t.Errorf("attempts = %d, want the retryer's %d", got, max)
			}
			out, err := clean.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: item(pk), ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			if wrote := out.Item != nil; wrote != (tc.kind == TimeoutAfterWrite) {
				t.Errorf("item written = %v; only %s lets the write through", wrote, TimeoutAfterWrite)
			}
		})
	}
}

func isTimeout(err error) bool {
	var se *smithyhttp.RequestSendError
	var te interface{ Timeout() bool }
	return errors.As(err, &se) && errors.As(err, &te) && te.Timeout()
}

// TestRetryRecovers: a fault on the first attempt only is invisible to the
// caller, for both services.
func TestRetryRecovers(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			s, db, sq, _, _, table, qurl := clients(t, kind, 1)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item("fault#ok")}); err != nil {
				t.Fatalf("PutItem after one %s: %v", kind, err)
			}
			if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &qurl, MessageBody: aws.String("x")}); err != nil {
				t.Fatalf("SendMessage after one %s: %v", kind, err)
			}
			// Two attempts each: the faulted one and the retry. The emulator
			// sometimes cuts an answer short, which the SDK retries once more
			// on its own; that attempt is the emulator's, not the injector's.
			if p, m := s.count("PutItem"), s.count("SendMessage"); p < 2 || p > 3 || m < 2 || m > 3 {
				t.Errorf("attempts PutItem %d, SendMessage %d; want 2 each (3 when the emulator cut an answer short)", p, m)
			}
		})
	}
}

// TestSQSErrorTypes: injected SQS errors decode like real ones.
func TestSQSErrorTypes(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{Throttle, Internal} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			s, _, sq, _, _, _, qurl := clients(t, kind, -1)
			_, err := sq.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: &qurl, MessageBody: aws.String("x")})
			var code interface{ ErrorCode() string }
			if !errors.As(err, &code) || code.ErrorCode() != map[string]string{Throttle: "RequestThrottled", Internal: "InternalError"}[kind] {
				t.Fatalf("SendMessage error = %v", err)
			}
			if got, max := s.count("SendMessage"), sq.Options().Retryer.MaxAttempts(); got != max {
				t.Errorf("attempts = %d, want %d", got, max)
			}
		})
	}
}

// TestLedgerRecognisesItsOwnRetriedWrite: when the first attempt of
// Create's conditional put or Claim's conditional update succeeds but its
// answer is lost, the SDK's retry fails the condition on the caller's own
// write; the ledger must still report success.
func TestLedgerRecognisesItsOwnRetriedWrite(t *testing.T) {
	t.Parallel()
	s, db, _, clean, _, table, _ := clients(t, TimeoutAfterWrite, 1)
	l, err := ledger.New(db, ledger.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_fault_1"}
	rec, created, err := l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "invoice.paid"})
	if err != nil || !created || rec.Status != ledger.Received {
		t.Fatalf("Create = %+v, %v, %v; want created", rec, created, err)
	}
	if s.count("PutItem") != 2 {
		t.Fatalf("PutItem attempts = %d, want 2 (the lost answer, then the retry)", s.count("PutItem"))
	}
	claimed, err := l.Claim(t.Context(), id, time.Minute)
	if err != nil || claimed.Record.Status != ledger.Processing || claimed.Token == "" {
		t.Fatalf("Claim = %+v, %v; want our lease", claimed, err)
	}
	if s.count("UpdateItem") != 2 {
		t.Fatalf("UpdateItem attempts = %d, want 2", s.count("UpdateItem"))
	}
	if _, err := l.Complete(t.Context(), claimed); err != nil {
		t.Fatalf("Complete with the recovered lease token: %v", err)
	}
	cl, _ := ledger.New(clean, ledger.Options{Table: table})
	got, err := cl.Get(t.Context(), id)
	if err != nil || got.Status != ledger.Done || got.Attempts != 1 {
		t.Fatalf("record = %+v, %v; want done after exactly one claim", got, err)
	}
	// Another caller's Create is still a duplicate.
	if _, created, err := cl.Create(t.Context(), ledger.NewEvent{Key: id}); err != nil || created {
		t.Fatalf("second Create: created=%v err=%v; want a duplicate", created, err)
	}
}
