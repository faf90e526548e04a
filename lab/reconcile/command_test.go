package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/local"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reconcile"
	"github.com/hookledger/hookledger/lab/providerstub"
)

// effects records every charge and notification by its step key: the
// oracle of the command test.
type effects struct {
	mu             sync.Mutex
	charges, notes map[string]int
}

// routes handles stripe/invoice.paid with two steps: an at-least-once
// charge and an at-most-once notification, each with a check.
func (e *effects) routes() *hookledger.Router {
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "invoice.paid", func(ctx context.Context, ev *hookledger.Event) error {
		if _, err := ev.Step(ctx, "charge", e.record(e.charges), hookledger.Check(e.find(e.charges))); err != nil {
			return err
		}
		_, err := ev.Step(ctx, "notify", e.record(e.notes), hookledger.AtMostOnce(), hookledger.Check(e.find(e.notes)))
		return err
	})
	return r
}

func (e *effects) record(m map[string]int) func(context.Context, string) (string, error) {
	return func(_ context.Context, key string) (string, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		m[key]++
		return "", nil
	}
}

func (e *effects) find(m map[string]int) hookledger.CheckFunc {
	return func(_ context.Context, key string) (string, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if m[key] == 0 {
			return "", hookledger.ErrNotDone
		}
		return "", nil
	}
}

// counts reports the charges and notifications made, and how many keys
// were charged more than once.
func (e *effects) counts() (charges, notes, chargedTwice int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range e.charges {
		charges += n
		if n > 1 {
			chargedTwice++
		}
	}
	for _, n := range e.notes {
		notes += n
	}
	return
}

// operatorCLI builds cmd/hookledger and returns a function that runs it
// with env added to this process's environment: its exit code, stdout and
// stderr.
func operatorCLI(t *testing.T, env map[string]string) func(args ...string) (int, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hookledger")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/hookledger")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/hookledger: %v\n%s", err, out)
	}
	vars := os.Environ()
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	return func(args ...string) (int, *bytes.Buffer, *bytes.Buffer) {
		var out, errb bytes.Buffer
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = vars, &out, &errb
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("hookledger %s: %v", args[0], err)
		}
		return cmd.ProcessState.ExitCode(), &out, &errb
	}
}

// TestReconcileCommandHealsAnOutage runs `hookledger reconcile` as an
// operator would, after a Stripe outage, against the pipeline of hookledger
// dev (with test routes, whose recorded effects are the oracle) and the
// provider stub: every invoice charged exactly once.
func TestReconcileCommandHealsAnOutage(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	table := awstest.Table(t, cfg)
	qurl, _ := awstest.Queues(t, cfg, queue.QueueSpec{VisibilityTimeout: 20})
	fx := &effects{charges: map[string]int{}, notes: map[string]int{}}
	const secret = "whsec_reconcile_cmd"
	sources := `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:` + secret + `"]}}}}`
	env := map[string]string{"HOOKLEDGER_TABLE": table, "HOOKLEDGER_QUEUE_URL": qurl, "HOOKLEDGER_SOURCES": sources, "LOG_LEVEL": "warn",
		"AWS_ENDPOINT_URL": awstest.Endpoint(t)}
	c, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	d, err := local.New(c, cfg, engine.MustRoutes(fx.routes()), func(string) string { return "" }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, ln, 2, 10*time.Second, time.Second) }()
	defer func() { cancel(); <-done }()
	run := operatorCLI(t, env)

	stub := providerstub.New(providerstub.Options{})
	api := httptest.NewServer(stub)
	defer api.Close()
	webhookURL := "http://" + ln.Addr().String() + "/webhooks/{source}/{tenant}"
	stub.Stripe.SetEndpoint("http://"+ln.Addr().String()+"/webhooks/stripe/acme", secret)
	const invoices = 10
	lost := 0
	for i := range invoices {
		stub.Stripe.SetDown(i%3 == 1)
		obj := fmt.Sprintf(`{"id":"in_cmd_%d","object":"invoice","amount_paid":%d,"currency":"usd","customer":"cus_%d"}`, i, 1000+i, i)
		if _, ok, err := stub.Stripe.Emit(t.Context(), "invoice.paid", json.RawMessage(obj)); err != nil {
			t.Fatal(err)
		} else if !ok {
			lost++
		}
	}
	if lost != 3 {
		t.Fatalf("%d lost, want 3", lost)
	}
	args := []string{"reconcile", "--source", "stripe", "--tenant", "acme", "--credential", "literal:sk_test_stub", "--api-url", api.URL, "--min-age", "0s", "--url", webhookURL}

	if code, out, errb := run(append(args, "--dry-run")...); code != 0 {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out.String(), errb.String())
	} else if !strings.Contains(out.String(), "     3  missing from the ledger") || !strings.Contains(out.String(), "dry_run") {
		t.Fatalf("dry run output:\n%s", out.String())
	}
	if code, out, errb := run(args...); code != 0 {
		t.Fatalf("reconcile: exit %d\n%s\n%s", code, out.String(), errb.String())
	} else if !strings.Contains(out.String(), "     3  fed through the receiver and accepted") {
		t.Fatalf("reconcile output:\n%s", out.String())
	}
	deadline := time.Now().Add(60 * time.Second)
	for charges, _, _ := fx.counts(); charges < invoices && time.Now().Before(deadline); charges, _, _ = fx.counts() {
		time.Sleep(100 * time.Millisecond)
	}
	if charges, _, twice := fx.counts(); charges != invoices || twice != 0 {
		t.Fatalf("%d charges (%d twice): want %d invoices charged once each", charges, twice, invoices)
	}
	code, out, errb := run(append(args, "--json")...)
	if code != 0 {
		t.Fatalf("second run: exit %d %s", code, errb.String())
	}
	var rep reconcile.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Missing != 0 || rep.InLedger != 3 {
		t.Fatalf("second run: %+v %v\n%s", rep.Counts, err, out.String())
	}
	if charges, notes, _ := fx.counts(); charges != invoices || notes != invoices {
		t.Fatalf("after the second run: %d charges, %d notifications; want %d each", charges, notes, invoices)
	}
}
