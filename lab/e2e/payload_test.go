//go:build e2e

package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/sdkconfig"
	"github.com/hookledger/hookledger/ledger"
)

// largeInvoice is a Stripe invoice.paid event of about n bytes: an
// attachment of random bytes (base64) that gzip cannot shrink below SQS's
// 1 MiB, so the message carries only the payload store's key and the
// processor reads the object.
func largeInvoice(id string, amount, n int) []byte {
	noise := make([]byte, n*3/4)
	rand.Read(noise)
	b, _ := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": "invoice.paid", "created": time.Now().Unix(), "livemode": false,
		"data": map[string]any{"object": map[string]any{"id": "in_" + id, "object": "invoice", "amount_paid": amount, "currency": "eur",
			"customer": "cus_e2e", "customer_email": "large@example.com", "attachment": base64.StdEncoding.EncodeToString(noise)}},
	})
	return b
}

// TestLargeBodyThroughThePayloadStore: a 2 MB webhook, past what a ledger
// item and an SQS message hold, is accepted through the HTTP API, kept in
// the S3 payload store by the receiver's role, read back by the
// processor's role, charged and notified once by the shipped effect; and a
// 2 MB event that dies is replayed by `hookledger replay`, which reads its
// body from the store, and its replayed run names the first delivery's
// trace. All under enforced IAM.
func TestLargeBodyThroughThePayloadStore(t *testing.T) {
	e := setup(t)
	bucket := must(t, "HOOKLEDGER_E2E_PAYLOAD_BUCKET")
	cfg, err := sdkconfig.Load(t.Context(), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	store := &blob.Store{API: blob.NewClient(cfg), Bucket: bucket, Prefix: "payloads/"}

	goodKey, poisonKey := "evt_e2e_2mb_"+e.runID, "evt_e2e_2mb_poison_"+e.runID
	good := largeInvoice(goodKey, 2000, 2<<20)
	poison := largeInvoice(poisonKey, 0, 2<<20) // no positive amount: the effect fails it permanently
	for _, body := range [][]byte{good, poison} {
		if got := e.post(t, "stripe", "acme", body, e.secret); got.code != 200 || got.status != "accepted" {
			t.Fatalf("%d-byte body: got %+v, want 200 accepted", len(body), got)
		}
	}
	if got := e.post(t, "stripe", "acme", good, e.secret); got.code != 200 || got.status != "duplicate" {
		t.Errorf("duplicate of the 2 MB body: got %+v, want 200 duplicate", got)
	}
	rec := e.waitStatus(t, e.settle, ledger.Done, e.id(goodKey))[e.id(goodKey)]
	if rec.PayloadRef != store.Key(e.id(goodKey), rec.BodySHA256) || rec.Attempts != 1 {
		t.Errorf("record: ref %q, %d attempts; want the store's key and 1 attempt", rec.PayloadRef, rec.Attempts)
	}
	if stored, err := store.Get(t.Context(), rec.PayloadRef); err != nil || !bytes.Equal(stored, good) {
		t.Fatalf("stored object: %d bytes, %v; want the %d bytes sent", len(stored), err, len(good))
	}
	st := e.paymentStats(t)
	if st.PerEvent[goodKey] != 1 || st.Notified[goodKey] != 1 {
		t.Errorf("2 MB invoice charged %d and notified %d times, want exactly once each", st.PerEvent[goodKey], st.Notified[goodKey])
	}

	dead := e.waitStatus(t, e.settle, ledger.Dead, e.id(poisonKey))[e.id(poisonKey)]
	if !strings.Contains(dead.LastError, "amount") {
		t.Errorf("poison 2 MB event dead with %q, want the effect's cause", dead.LastError)
	}
	bin := filepath.Join(t.TempDir(), "hookledger")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/hookledger")
	build.Dir = filepath.Join("..", "..") // the repository's root, two levels above lab/e2e
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/hookledger: %v\n%s", err, out)
	}
	replayedAt := time.Now()
	cmd := exec.CommandContext(t.Context(), bin, "replay", "--source", "stripe", "--tenant", "acme", "--id", poisonKey)
	cmd.Env = append(os.Environ(), "HOOKLEDGER_TABLE="+e.table, "HOOKLEDGER_QUEUE_URL="+e.queueURL,
		"HOOKLEDGER_PAYLOAD_BUCKET="+bucket, "HOOKLEDGER_SHARDS=16")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "replayed stripe/acme/"+poisonKey) {
		t.Fatalf("hookledger replay: %v\n%s", err, out)
	}
	// The replayed event runs again from the store's body and dies again
	// (its body is still not payable), never charged.
	deadline := time.Now().Add(e.settle)
	for {
		r, err := e.ledger.Get(t.Context(), e.id(poisonKey))
		if err == nil && r.Status == ledger.Dead && r.UpdatedAt.After(replayedAt) && r.Attempts == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replayed event not run again: %+v %v", r, err)
		}
		time.Sleep(time.Second)
	}
	if n := e.paymentStats(t).PerEvent[poisonKey]; n != 0 {
		t.Errorf("the poison event was charged %d times", n)
	}
	// Both runs, the first and the replayed one, name the trace its record keeps.
	e.requireTraceKept(t, e.id(poisonKey), 2)
}
