package ordering

import (
	"bytes"
	"context"
	"fmt"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/stripe"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/local"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// The proof's size (HOOKLEDGER_ORDERING_SUBS and _UPDATES change it for a
// longer run).
const (
	subs          = 100
	perSub        = 100               // updates per subscription: 10,000 in all
	dupShare      = 0.15              // updates delivered a second time
	nearlyPercent = 20                // of the subscriptions, whose updates come nearly in order
	window        = 12                // how far such an update may be from its turn
	failShare     = 0.03              // first attempts that fail before applying
	senders       = 16                // concurrent HTTP deliveries
	pollers       = 8                 // concurrent SQS pollers, 10 messages a batch
	deadline      = 300 * time.Second // 1.5 to 3 minutes on a 2-core machine, by its load
)

// TestUpdatesApplyInOrder sends 10,000 updates of 100 subscriptions through
// the real receiver, in random order (a fifth of the subscriptions nearly in
// order, so that their updates meet in flight) and with duplicates, and processes
// them with concurrent pollers through the real processor, against the
// emulator. The route keeps its events in order per subscription
// (InOrder(stripe.Object), SkipStale). It proves, from an oracle the
// handler writes to:
//
//   - for every subscription, the last state applied is its newest;
//   - no older state is ever applied after a newer one, and no two
//     updates of one subscription are applied at once;
//   - every event ends done: applied, or skipped as stale with the reason
//     in its record; none failed, dead or stuck.
func TestUpdatesApplyInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("the ordering proof takes a minute or two; not in -short")
	}
	nSubs, nPer := envInt(t, "HOOKLEDGER_ORDERING_SUBS", subs), envInt(t, "HOOKLEDGER_ORDERING_UPDATES", perSub)
	cfg := awstest.Config(t)
	table := awstest.Table(t, cfg)
	// Short enough that a message given back (a failed first attempt, a
	// resource busy past the processor's wait) comes back within the run.
	qurl, _ := awstest.Queues(t, cfg, queue.QueueSpec{VisibilityTimeout: 6, MaxReceiveCount: 50})
	const secret = "whsec_ordering_proof"
	c, err := config.Load(func(k string) string {
		return map[string]string{
			"HOOKLEDGER_TABLE": table, "HOOKLEDGER_QUEUE_URL": qurl,
			"HOOKLEDGER_SOURCES":       `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:` + secret + `"]}}}}`,
			"HOOKLEDGER_RECLAIM_AFTER": "10m", // the queue redelivers; the reclaimer is for what it loses
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	oracle := NewOracle()
	routes := hookledger.NewRouter()
	routes.HandleFunc("stripe", "customer.subscription.updated", oracle.Handler(failShare, 20*time.Millisecond),
		hookledger.InOrder(stripe.Object), hookledger.SkipStale())
	var logs bytes.Buffer
	d, err := local.New(c, cfg, engine.MustRoutes(routes), func(string) string { return "" }, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var emfMu sync.Mutex
	d.Processor.Metrics = metric.New(lockedWriter{&emfMu, &logs}, "lab")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan struct{})
	go func() { d.Run(ctx, ln, pollers, 5*time.Second, time.Minute); close(stopped) }()
	defer func() { cancel(); <-stopped }()

	updates := Updates(nSubs, nPer)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(21, seed))
	nearly := map[string]bool{}
	for s := range max(1, nSubs*nearlyPercent/100) {
		nearly[fmt.Sprintf("sub_%03d", s)] = true
	}
	deliveries := Deliveries(updates, nearly, window, dupShare, rng)
	start := time.Now()
	v, _ := webhook.New(webhook.Config{Provider: "stripe"})
	url := "http://" + ln.Addr().String() + "/webhooks/stripe/acme"
	client := &http.Client{Timeout: 30 * time.Second}
	var next atomic.Int64
	var answers sync.Map // "status result" -> *atomic.Int64
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if int(i) >= len(deliveries) || ctx.Err() != nil {
					return
				}
				u := deliveries[i]
				body := u.Body()
				hdr, err := v.Sign(webhook.Message{Body: body, Now: time.Now()}, secret)
				if err != nil {
					t.Error(err)
					return
				}
				status, result, err := cli.Post(ctx, client, url, hdr, body)
				for try := 0; err != nil || status >= 500; try++ { // the sender retries, as Stripe does
					if try == 5 {
						t.Errorf("delivery of %s: %d %s %v", u.ID, status, result, err)
						break
					}
					time.Sleep(200 * time.Millisecond)
					status, result, err = cli.Post(ctx, client, url, hdr, body)
				}
				n, _ := answers.LoadOrStore(fmt.Sprintf("%d %s", status, result), new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
		})
	}
	wg.Wait()
	sent := time.Since(start)
	answers.Range(func(k, v any) bool {
		if !strings.HasPrefix(k.(string), "200 ") {
			t.Errorf("%d deliveries answered %s", v.(*atomic.Int64).Load(), k)
		}
		return true
	})

	l, err := ledger.New(dynamodb.NewFromConfig(cfg), c.LedgerOptions())
	if err != nil {
		t.Fatal(err)
	}
	var counts map[ledger.Status]int
	for until := start.Add(deadline); ; {
		counts, err = l.Counts(t.Context())
		if err == nil && counts[ledger.Done] == len(updates) {
			break
		}
		if time.Now().After(until) {
			t.Fatalf("not every event ended done within %v: %v (%v)", deadline, counts, err)
		}
		time.Sleep(time.Second)
	}
	took := time.Since(start)
	cancel()
	<-stopped

	subsList := make([]string, 0, nSubs)
	for s := range nSubs {
		subsList = append(subsList, fmt.Sprintf("sub_%03d", s))
	}
	for _, v := range oracle.Check(subsList, nPer) {
		t.Error(v)
	}
	// The ledger's account agrees with the oracle's: an event is done
	// either applied (no reason) or skipped as stale (with one).
	recs, err := l.List(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	applications, appliedIDs := oracle.Applied()
	skipped := 0
	for _, r := range recs {
		switch {
		case r.Status != ledger.Done:
			t.Errorf("%s ended %s", r.Key, r.Status)
		case r.Skipped != "":
			skipped++
			if appliedIDs[r.ID] {
				t.Errorf("%s applied, yet recorded skipped: %s", r.Key, r.Skipped)
			}
			// After a failed first attempt the skip says the run may have
			// applied it (the handler ran; it failed before applying).
			if !strings.HasPrefix(r.Skipped, "skipped as stale: resource sub_") && !strings.HasPrefix(r.Skipped, "skipped as stale after a run that may have applied it (") {
				t.Errorf("%s skipped for %q", r.Key, r.Skipped)
			}
		case !appliedIDs[r.ID]:
			t.Errorf("%s done and not skipped, yet never applied", r.Key)
		}
	}
	if len(recs) != len(updates) || skipped+len(appliedIDs) != len(updates) {
		t.Errorf("%d records, %d skipped, %d applied; want %d in all", len(recs), skipped, len(appliedIDs), len(updates))
	}
	emfMu.Lock()
	emf := logs.String()
	emfMu.Unlock()
	t.Logf("%d updates of %d subscriptions (%d of them nearly in order), %d deliveries (%d duplicates; seed %d), %d senders, %d pollers: sent in %.1fs, all done in %.1fs",
		len(updates), nSubs, len(nearly), len(deliveries), len(deliveries)-len(updates), seed, senders, pollers, sent.Seconds(), took.Seconds())
	t.Logf("applied %d updates (%d applications), skipped %d as stale; processor: %d stale, %d stale after a run, %d takes waited for another update's run, %d given back busy, %d failed runs (first attempts failing, redeliveries meeting a live run)",
		len(appliedIDs), applications, skipped, strings.Count(emf, `"Stale":1`), strings.Count(emf, `"StaleAfterRun":1`), strings.Count(emf, `"ResourceWaited":1`), strings.Count(emf, `"ResourceBusy":1`), strings.Count(emf, `"Failed":1`))
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
