package local

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
	"gopkg.in/yaml.v3"
)

func TestHealthz(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	(&Pipeline{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != 200 || rec.Body.String() != "ok\n" {
		t.Fatalf("healthz: %d %q", rec.Code, rec.Body.String())
	}
}

// TestRunRefusesBadSettings: a tick, timeout or poller count that is not
// positive is an error from Run, not a panic in time.NewTicker, a deadline
// already past, or a silent correction; and Run serves nothing.
func TestRunRefusesBadSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pollers        int
		timeout, every time.Duration
		want           string
	}{
		{2, time.Second, 0, "reclaimer interval"},
		{2, time.Second, -time.Second, "reclaimer interval"},
		{2, 0, time.Second, "function timeout"},
		{2, -time.Second, time.Second, "function timeout"},
		{0, time.Second, time.Second, "pollers"},
		{-3, time.Second, time.Second, "pollers"},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		err = (&Pipeline{}).Run(t.Context(), ln, tc.pollers, tc.timeout, tc.every)
		ln.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(pollers %d, timeout %v, every %v): %v; want an error about the %s", tc.pollers, tc.timeout, tc.every, err, tc.want)
		}
	}
}

// deadlines is a ledger for the receiver that notes whether each write's
// context had a deadline, and how far off.
type deadlines struct {
	mu   sync.Mutex
	left []time.Duration // 0: none
}

func (d *deadlines) note(ctx context.Context) {
	var left time.Duration
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	d.mu.Lock()
	d.left = append(d.left, left)
	d.mu.Unlock()
}

func (d *deadlines) Create(ctx context.Context, ev ledger.NewEvent) (ledger.Record, bool, error) {
	d.note(ctx)
	return ledger.Record{Key: ev.Key, Status: ledger.Received, EventType: ev.Type, BodySHA256: ev.BodySHA256}, true, nil
}

func (d *deadlines) PutPayload(ctx context.Context, _ ledger.Key, _ []byte, _ string) error {
	d.note(ctx)
	return nil
}

func (d *deadlines) ClaimBody(context.Context, ledger.Key, ledger.Identity) (string, error) {
	return "", nil
}

func (d *deadlines) Send(ctx context.Context, _ queue.Message) error {
	d.note(ctx)
	return nil
}

// TestReceiverRequestsHaveTheDeployedDeadline: the deployed receiver has
// the template's 10 s; dev used to give a request no deadline at all, so a
// write retried for minutes could land behind the reclaimer's marks. Each
// write of a request now runs under ReceiverTimeout, the template's value.
func TestReceiverRequestsHaveTheDeployedDeadline(t *testing.T) {
	t.Parallel()
	var tmpl struct {
		Resources struct {
			ReceiverFunction struct {
				Properties struct {
					Timeout int `yaml:"Timeout"`
				} `yaml:"Properties"`
			} `yaml:"ReceiverFunction"`
		} `yaml:"Resources"`
	}
	raw, err := os.ReadFile("../../template.yaml")
	if err == nil {
		err = yaml.Unmarshal(raw, &tmpl)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(tmpl.Resources.ReceiverFunction.Properties.Timeout) * time.Second; got != ReceiverTimeout {
		t.Fatalf("the template's receiver Timeout is %v, ReceiverTimeout %v", got, ReceiverTimeout)
	}

	const secret = "whsec_local_deadline"
	reg, err := source.NewRegistry(map[string]source.Source{"stripe": {Config: webhook.Config{Provider: "stripe"},
		Tenants: map[string]source.Tenant{"acme": {Secrets: []string{"literal:" + secret}}}}}, &source.Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	seen := &deadlines{}
	p := &Pipeline{Receiver: &receiver.Handler{Sources: reg, Ledger: seen, Queue: seen, Payload: config.PayloadAlways}}
	v, _ := webhook.New(webhook.Config{Provider: "stripe"})
	body := []byte(`{"id":"evt_deadline","type":"invoice.paid"}`)
	hdr, err := v.Sign(webhook.Message{Body: body, Now: time.Now()}, secret)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/webhooks/stripe/acme", bytes.NewReader(body))
	maps.Copy(req.Header, hdr)
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, req)
	if rec.Code/100 != 2 {
		t.Fatalf("answer %d %s", rec.Code, rec.Body.String())
	}
	if len(seen.left) != 3 {
		t.Fatalf("%d writes, want the record, the payload and the message", len(seen.left))
	}
	for i, left := range seen.left {
		if left <= 0 || left > ReceiverTimeout {
			t.Errorf("write %d ran with %v left before its deadline (0: none); want at most %v", i, left, ReceiverTimeout)
		}
	}
}

// TestRunLeavesOutTheMissingParts: a Pipeline without a processor or a
// reclaimer (dev --only receiver) serves the receiver and nothing else:
// Run used to start SQS pollers and the reclaimer's ticker regardless, on
// nil handlers. Without a receiver it serves nothing and needs no listener.
func TestRunLeavesOutTheMissingParts(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- (&Pipeline{Receiver: &receiver.Handler{}}).Run(ctx, ln, 2, time.Second, time.Millisecond)
	}()
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || resp.StatusCode != http.StatusOK {
		t.Fatalf("receiver only: healthz %d, Run returned %v", resp.StatusCode, err)
	}

	ctx, cancel = context.WithCancel(t.Context())
	go func() { done <- (&Pipeline{}).Run(ctx, nil, 2, time.Second, time.Millisecond) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("no parts: Run returned %v", err)
	}
}

// TestDevNamesTheFixForTheOldEnvironment: an environment kept from before
// 0.1.0 (HOOKLEDGER_MAX_RECLAIMS set) is refused with the message that
// says to unset it; dev also told the user to run `hookledger setup`,
// which changes nothing. The hint stays for what setup does fix: no queue.
func TestDevNamesTheFixForTheOldEnvironment(t *testing.T) {
	for k, v := range map[string]string{"HOOKLEDGER_SETTINGS": "", "HOOKLEDGER_SOURCES_FILE": "", "HOOKLEDGER_METRICS": "",
		"HOOKLEDGER_TABLE": "hookledger", "HOOKLEDGER_SOURCES": `{}`} {
		t.Setenv(k, v)
	}
	dev := func() string {
		t.Helper()
		var errb bytes.Buffer
		if code := (DevCommand{Program: "hookledger"}).Run(t.Context(), nil, &bytes.Buffer{}, &errb); code != 2 {
			t.Fatalf("exit %d, want 2; stderr %q", code, errb.String())
		}
		return errb.String()
	}
	t.Setenv("HOOKLEDGER_QUEUE_URL", "http://localhost:4566/000000000000/hookledger")
	t.Setenv("HOOKLEDGER_MAX_RECLAIMS", "5")
	if got := dev(); !strings.Contains(got, "HOOKLEDGER_MAX_RECLAIMS is gone") || !strings.Contains(got, "unset it") || strings.Contains(got, "setup") {
		t.Errorf("old environment: stderr %q; want the reason and the fix (unset it), not hookledger setup", got)
	}
	t.Setenv("HOOKLEDGER_MAX_RECLAIMS", "")
	t.Setenv("HOOKLEDGER_QUEUE_URL", "")
	if got := dev(); !strings.Contains(got, "HOOKLEDGER_QUEUE_URL is empty") || !strings.Contains(got, "hookledger setup") {
		t.Errorf("no queue: stderr %q; want hookledger setup, which creates it", got)
	}
}
