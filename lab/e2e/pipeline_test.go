//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger/internal/sdkconfig"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// env is what lab/scripts/e2e.sh hands the test about the deployed stack.
type env struct {
	api      string // the HTTP API's base URL (stack output ApiEndpoint)
	table    string // the ledger table (stack output LedgerTableName)
	dlqURL   string // the dead-letter queue (stack output DeadLetterQueueUrl)
	queueURL string // the processing queue (stack output QueueUrl)
	secret   string // the Stripe signing secret of source stripe, tenant acme
	shards   int    // HOOKLEDGER_SHARDS the stack was deployed with
	runID    string // makes event ids unique per run
	settle   time.Duration
	reclaim  time.Duration
	client   *http.Client
	ledger   *ledger.Ledger
	sqs      *sqs.Client
	verifier *webhook.Verifier
}

func setup(t *testing.T) *env {
	t.Helper()
	api := os.Getenv("HOOKLEDGER_E2E_API")
	if api == "" {
		t.Fatal("HOOKLEDGER_E2E_API is not set: these tests drive a deployed stack; run lab/scripts/e2e.sh (make e2e)")
	}
	if os.Getenv("AWS_ENDPOINT_URL") == "" && os.Getenv("HOOKLEDGER_E2E_REAL_AWS") != "1" {
		t.Fatal("AWS_ENDPOINT_URL is not set: refusing to touch real AWS (set HOOKLEDGER_E2E_REAL_AWS=1 to mean it)")
	}
	e := &env{
		api:      strings.TrimRight(api, "/"),
		table:    must(t, "HOOKLEDGER_E2E_TABLE"),
		dlqURL:   os.Getenv("HOOKLEDGER_E2E_DLQ_URL"),
		queueURL: os.Getenv("HOOKLEDGER_E2E_QUEUE_URL"),
		secret:   must(t, "HOOKLEDGER_E2E_SECRET"),
		shards:   16,
		runID:    fmt.Sprintf("%d", time.Now().UnixNano()),
		settle:   durationEnv(t, "HOOKLEDGER_E2E_SETTLE", 90*time.Second),
		reclaim:  durationEnv(t, "HOOKLEDGER_E2E_RECLAIM_WAIT", 200*time.Second),
	}
	if v := os.Getenv("HOOKLEDGER_E2E_SHARDS"); v != "" {
		fmt.Sscan(v, &e.shards)
	}
	e.client = &http.Client{Timeout: 30 * time.Second, Transport: localhostTransport()}
	cfg, err := sdkconfig.Load(t.Context(), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	e.ledger, err = ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: e.table, Shards: e.shards, ReclaimAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.sqs = sqs.NewFromConfig(cfg)
	e.verifier, err = webhook.New(webhook.Config{Provider: "stripe"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// localhostTransport resolves every *.localhost name to the loopback
// address: emulators address an API by host name ({id}.execute-api.localhost),
// which not every resolver maps to 127.0.0.1.
func localhostTransport() *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err == nil && strings.HasSuffix(host, ".localhost") {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return d.DialContext(ctx, network, addr)
	}
	return tr
}

func must(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set", name)
	}
	return v
}

func durationEnv(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

func stripeEvent(id, typ string) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "created": time.Now().Unix(), "livemode": false,
		"data": map[string]any{"object": map[string]any{"id": "in_" + id, "object": "invoice", "amount_paid": 2000, "currency": "eur",
			"customer": "cus_e2e", "customer_email": "billing@example.com"}},
	})
	return b
}

type answer struct {
	code   int
	status string
}

// post sends body to /webhooks/{source}/{tenant}, signed with secret as
// Stripe signs.
func (e *env) post(t *testing.T, source, tenant string, body []byte, secret string) answer {
	t.Helper()
	return e.postAs(t, e.verifier, webhook.Message{Body: body}, source, tenant, secret)
}

// postAs sends m.Body signed by v's scheme.
func (e *env) postAs(t *testing.T, v *webhook.Verifier, m webhook.Message, source, tenant, secret string) answer {
	t.Helper()
	m.Now = time.Now()
	h, err := v.Sign(m, secret)
	if err != nil {
		t.Fatal(err)
	}
	body := m.Body
	u := e.api + "/webhooks/" + url.PathEscape(source) + "/" + url.PathEscape(tenant)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Status string `json:"status"`
	}
	json.Unmarshal(raw, &out)
	return answer{code: resp.StatusCode, status: out.Status}
}

// waitStatus polls the ledger until every id is in want, or fails after d.
func (e *env) waitStatus(t *testing.T, d time.Duration, want ledger.Status, ids ...ledger.Key) map[ledger.Key]ledger.Record {
	t.Helper()
	deadline := time.Now().Add(d)
	got := map[ledger.Key]ledger.Record{}
	last := map[ledger.Key]error{}
	for {
		pending := 0
		for _, id := range ids {
			rec, err := e.ledger.Get(t.Context(), id)
			if err == nil {
				got[id] = rec
			} else {
				last[id] = err
			}
			if err != nil || rec.Status != want {
				pending++
			}
		}
		if pending == 0 {
			return got
		}
		if time.Now().After(deadline) {
			for _, id := range ids {
				r := got[id]
				t.Logf("%s: status=%q attempts=%d reclaims=%d last_error=%q read error=%v",
					id, r.Status, r.Attempts, r.Reclaims, r.LastError, last[id])
			}
			t.Fatalf("%d of %d records not %s after %v", pending, len(ids), want, d)
		}
		time.Sleep(time.Second)
	}
}

func (e *env) id(key string) ledger.Key {
	return ledger.Key{Source: "stripe", Tenant: "acme", ID: key}
}

// TestPipeline drives the deployed stack end to end: receiver through the
// HTTP API, processor through the SQS event source, reclaimer through its
// schedule, and reads the outcome from the ledger.
func TestPipeline(t *testing.T) {
	e := setup(t)

	newKey := "evt_e2e_new_" + e.runID
	concKey := "evt_e2e_conc_" + e.runID
	lostKey := "evt_e2e_lost_" + e.runID

	t.Run("rejections touch nothing", func(t *testing.T) {
		body := stripeEvent("evt_e2e_rejected_"+e.runID, "invoice.paid")
		cases := []struct {
			name, source, tenant, secret string
			want                         int
		}{
			{"bad signature", "stripe", "acme", "whsec_not_the_secret", http.StatusUnauthorized},
			{"unknown tenant", "stripe", "nobody", e.secret, http.StatusNotFound},
			{"unknown source", "nosuchsource", "acme", e.secret, http.StatusNotFound},
		}
		for _, c := range cases {
			if got := e.post(t, c.source, c.tenant, body, c.secret); got.code != c.want {
				t.Errorf("%s: got %d, want %d", c.name, got.code, c.want)
			}
		}
		if _, err := e.ledger.Get(t.Context(), e.id("evt_e2e_rejected_"+e.runID)); err == nil {
			t.Error("a rejected request left a ledger record")
		}
	})

	t.Run("new then duplicate", func(t *testing.T) {
		body := stripeEvent(newKey, "invoice.paid")
		if got := e.post(t, "stripe", "acme", body, e.secret); got.code/100 != 2 || got.status != "accepted" {
			t.Fatalf("new event: got %+v, want 2xx accepted", got)
		}
		if got := e.post(t, "stripe", "acme", body, e.secret); got.code/100 != 2 || got.status != "duplicate" {
			t.Fatalf("duplicate: got %+v, want 2xx duplicate", got)
		}
	})

	// The receiver's role reads these from the stores under enforced IAM,
	// all under SecretsPrefix: stripe/acme (above) from SSM Parameter Store,
	// stripe/globex from Secrets Manager by name, github/acme from Secrets
	// Manager by its ARN given without the random suffix.
	globexKey := "evt_e2e_globex_" + e.runID
	ghDelivery := "gh-e2e-" + e.runID
	t.Run("secrets from Secrets Manager, by name and by ARN without its suffix", func(t *testing.T) {
		if got := e.post(t, "stripe", "globex", stripeEvent(globexKey, "invoice.paid"), must(t, "HOOKLEDGER_E2E_SECRET_GLOBEX")); got.code/100 != 2 || got.status != "accepted" {
			t.Errorf("stripe/globex (secretsmanager: under the prefix): got %+v, want 2xx accepted", got)
		}
		gv, err := webhook.New(webhook.Config{Provider: "github"})
		if err != nil {
			t.Fatal(err)
		}
		m := webhook.Message{ID: ghDelivery, Type: "push", Body: []byte(`{"ref":"refs/heads/main","after":"` + e.runID + `"}`)}
		if got := e.postAs(t, gv, m, "github", "acme", must(t, "HOOKLEDGER_E2E_SECRET_GITHUB")); got.code/100 != 2 || got.status != "accepted" {
			t.Errorf("github/acme (secretsmanager: ARN without the suffix, under the prefix): got %+v, want 2xx accepted", got)
		}
		if got := e.postAs(t, gv, m, "github", "acme", "gh_not_the_secret"); got.code != http.StatusUnauthorized {
			t.Errorf("github/acme with another secret: got %+v, want 401", got)
		}
	})

	t.Run("20 concurrent deliveries of one event", func(t *testing.T) {
		body := stripeEvent(concKey, "invoice.paid")
		const n = 20
		answers := make([]answer, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				answers[i] = e.post(t, "stripe", "acme", body, e.secret)
			})
		}
		close(start)
		wg.Wait()
		accepted := 0
		for i, a := range answers {
			if a.code/100 != 2 {
				t.Errorf("delivery %d: %d, want 2xx", i, a.code)
			}
			if a.status == "accepted" {
				accepted++
			}
		}
		if accepted != 1 {
			t.Errorf("%d deliveries accepted, want exactly 1 (the rest duplicate)", accepted)
		}
	})

	t.Run("processor completes each event once", func(t *testing.T) {
		recs := e.waitStatus(t, e.settle, ledger.Done, e.id(newKey), e.id(concKey),
			ledger.Key{Source: "stripe", Tenant: "globex", ID: globexKey}, ledger.Key{Source: "github", Tenant: "acme", ID: ghDelivery})
		for id, r := range recs {
			if r.Attempts != 1 {
				t.Errorf("%s: %d attempts, want 1", id, r.Attempts)
			}
			// A done record keeps its due entry (the exit write is gone
			// from the happy path); the reclaimer reads it and passes it.
			if r.DueAt.IsZero() {
				t.Errorf("%s: done without its due entry: Complete wrote the index", id)
			}
		}
	})

	t.Run("reclaimer recovers an event whose enqueue was lost", func(t *testing.T) {
		// What a receiver that died between the ledger write and the enqueue
		// leaves behind: a received record and its payload, no message.
		id := e.id(lostKey)
		body := stripeEvent(lostKey, "invoice.paid")
		if _, created, err := e.ledger.Create(t.Context(), ledger.NewEvent{Key: id, Type: "invoice.paid"}); err != nil || !created {
			t.Fatalf("create: created=%v err=%v", created, err)
		}
		if err := e.ledger.PutPayload(t.Context(), id, body, ""); err != nil {
			t.Fatal(err)
		}
		rec := e.waitStatus(t, e.reclaim, ledger.Done, id)[id]
		if rec.Reclaims < 1 {
			t.Errorf("done with %d reclaims; want the reclaimer to have re-driven it", rec.Reclaims)
		}
		// A late duplicate from the sender changes nothing.
		if got := e.post(t, "stripe", "acme", body, e.secret); got.code/100 != 2 || got.status != "duplicate" {
			t.Errorf("late duplicate: got %+v, want 2xx duplicate", got)
		}
	})

	t.Run("the deployed processor charged and notified each invoice once", func(t *testing.T) {
		st := e.paymentStats(t)
		for _, k := range []string{newKey, concKey, lostKey} {
			if n := st.PerEvent[k]; n != 1 {
				t.Errorf("%s charged %d times, want exactly once", k, n)
			}
			if n := st.Notified[k]; n != 1 {
				t.Errorf("%s notified %d times, want exactly once", k, n)
			}
		}
	})

	t.Run("dead-letter queue is empty", func(t *testing.T) {
		if e.dlqURL == "" {
			t.Fatal("HOOKLEDGER_E2E_DLQ_URL not set; run lab/scripts/e2e.sh (make e2e)")
		}
		if visible, inFlight := e.depth(t, e.dlqURL); visible+inFlight != 0 {
			t.Errorf("DLQ holds %d messages (%d in flight), want 0", visible+inFlight, inFlight)
		}
	})

	t.Run("processing queue drains", func(t *testing.T) {
		if e.queueURL == "" {
			t.Fatal("HOOKLEDGER_E2E_QUEUE_URL not set; run lab/scripts/e2e.sh (make e2e)")
		}
		// Acknowledged messages leave the queue once the event source mapping
		// has deleted them; allow it a few seconds after the ledger settled.
		var visible, inFlight int
		for range 40 {
			if visible, inFlight = e.depth(t, e.queueURL); visible+inFlight == 0 {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if visible+inFlight != 0 {
			t.Errorf("%d visible and %d in-flight messages on the processing queue after every event is done", visible, inFlight)
		}
	})
}

// paymentStats reads the payments stub's counts per event.
func (e *env) paymentStats(t *testing.T) (st struct {
	PerEvent map[string]int `json:"per_event"`
	Notified map[string]int `json:"notified_per_event"`
}) {
	t.Helper()
	payments := os.Getenv("HOOKLEDGER_E2E_PAYMENTS_URL")
	if payments == "" {
		t.Fatal("HOOKLEDGER_E2E_PAYMENTS_URL not set; run lab/scripts/e2e.sh (make e2e), which starts the payments stub")
	}
	resp, err := e.client.Get(payments + "/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// depth reads a queue's visible and in-flight message counts.
func (e *env) depth(t *testing.T, queueURL string) (visible, inFlight int) {
	t.Helper()
	out, err := e.sqs.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: &queueURL,
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Sscan(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)], &visible)
	fmt.Sscan(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)], &inFlight)
	return visible, inFlight
}
