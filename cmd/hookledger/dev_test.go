package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/hookledger/hookledger/internal/engine"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/hookledger/hookledger/internal/local"

	"github.com/hookledger/hookledger/internal/cli"

	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// TestPipelineChargesOnce drives the real handlers through hookledger dev's
// HTTP server, SQS pollers and reclaimer ticker against the emulator, with
// sequential and concurrent duplicates, and checks the payments stub: every
// invoice charged and notified exactly once. The processor's line of each
// event names the trace its receiver made and its record keeps.
func TestPipelineChargesOnce(t *testing.T) {
	cfg := awstest.Config(t)
	table := awstest.Table(t, cfg)
	qurl, _ := awstest.Queues(t, cfg, queue.QueueSpec{VisibilityTimeout: 20})
	fx := newEffects()
	const secret = "whsec_pipeline_test"
	c, err := config.Load(func(k string) string {
		return map[string]string{
			"HOOKLEDGER_TABLE": table, "HOOKLEDGER_QUEUE_URL": qurl,
			"HOOKLEDGER_SOURCES": `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:` + secret + `"]}}}}`,
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	d, err := local.New(c, cfg, engine.MustRoutes(fx.routes()), func(string) string { return "" }, slog.New(slog.NewJSONHandler(logs, nil)))
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

	v, _ := webhook.New(webhook.Config{Provider: "stripe"})
	url := "http://" + ln.Addr().String() + "/webhooks/stripe/acme"
	const events = 12
	var wg sync.WaitGroup
	statuses := make(chan string, events*10)
	for i := range events {
		body := cli.SampleInvoice(fmt.Sprintf("evt_pipe_%02d", i), 1000+i)
		hdr, _ := v.Sign(webhook.Message{Body: body, Now: time.Now()}, secret)
		copies := 1 + i%3 // 1 to 3 deliveries each
		if i == 0 {
			copies = 20 // a concurrent burst
		}
		for range copies {
			wg.Go(func() {
				status, result, err := cli.Post(ctx, http.DefaultClient, url, hdr, body)
				if err != nil {
					t.Error(err)
				}
				statuses <- fmt.Sprintf("%d %s", status, result)
			})
		}
	}
	wg.Wait()
	close(statuses)
	accepted := 0
	for s := range statuses {
		if !strings.HasPrefix(s, "200 ") {
			t.Errorf("delivery answered %s", s)
		}
		if s == "200 accepted" {
			accepted++
		}
	}
	if accepted != events {
		t.Errorf("%d accepted, want %d", accepted, events)
	}
	l, _ := ledger.New(dynamodb.NewFromConfig(cfg), c.LedgerOptions())
	deadline := time.Now().Add(60 * time.Second)
	for {
		counts, err := l.Counts(t.Context())
		if err == nil && counts[ledger.Done] == events {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pipeline did not finish: %v %v", counts, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if charges, notes, twice, notifiedTwice := fx.counts(); charges != events || notes != events || twice != 0 || notifiedTwice != 0 {
		t.Fatalf("%d charges (%d twice), %d notifications (%d twice): want %d events charged and notified once each", charges, twice, notes, notifiedTwice, events)
	}
	processed := 0
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil || m["msg"] != "event" || m["outcome"] != "processed" {
			continue
		}
		processed++
		rec, err := l.Get(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: fmt.Sprint(m["event_id"])})
		if err != nil || m["trace_id"] == nil || m["trace_id"] != trace.ID(rec.Trace) {
			t.Errorf("%v processed with trace_id %v; its record keeps %q (%v)", m["event_id"], m["trace_id"], rec.Trace, err)
		}
	}
	if processed < events {
		t.Errorf("%d processed lines, want %d", processed, events)
	}
}

// lockedBuffer is a log sink the pipeline's goroutines share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	for name := range commands() {
		var out, errb bytes.Buffer
		code := run(t.Context(), []string{name, "--help"}, &out, &errb)
		// Once, to stdout; nothing on stderr.
		if code != 0 || strings.Count(out.String(), "usage: hookledger "+name) != 1 || errb.Len() != 0 {
			t.Errorf("%s --help: exit %d, stdout %q, stderr %q", name, code, out.String(), errb.String())
		}
	}
	var out bytes.Buffer
	if code := run(t.Context(), []string{"--help"}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), "dev") {
		t.Errorf("top-level help: %d %q", code, out.String())
	}
	if code := run(t.Context(), []string{"bogus"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("unknown command exit %d, want 2", code)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"send"}, // no secret
		{"send", "--secret", "s", "--repeat", "0"},
		{"list", "--status", "bogus"},
		{"inspect"},
		{"dev", "--no-such-flag"},
	} {
		var errb bytes.Buffer
		if code := run(t.Context(), args, io.Discard, &errb); code != 2 || errb.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 with a message", args, code, errb.String())
		}
	}
}

func TestSampleInvoiceIsAnInvoice(t *testing.T) {
	t.Parallel()
	var v struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			Object struct {
				AmountPaid int `json:"amount_paid"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(cli.SampleInvoice("evt_x", 4900), &v); err != nil || v.ID != "evt_x" || v.Type != "invoice.paid" || v.Data.Object.AmountPaid != 4900 {
		t.Fatalf("%+v %v", v, err)
	}
}
