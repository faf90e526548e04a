package ledger_test

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/ledger"
)

// The replay guard: one body digest per source and tenant within the
// retention window. The first delivery and its retries (same key) pass; the
// same body under another key is reported with the first key; another
// tenant, another body, or an expired guard pass.
func TestClaimBodyRefusesTheSameBodyUnderANewKey(t *testing.T) {
	t.Parallel()
	f := setup(t, func(o *ledger.Options) { o.Retention = 24 * time.Hour })
	first := ledger.ID{Source: "github", Tenant: "acme", Key: "delivery-1"}
	claim := func(id ledger.ID, digest string) string {
		t.Helper()
		k, err := f.l.ClaimBody(t.Context(), id, digest)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if k := claim(first, "d1"); k != "delivery-1" {
		t.Fatalf("first delivery: %q", k)
	}
	f.meter.Reset()
	if k := claim(first, "d1"); k != "delivery-1" {
		t.Errorf("a retry with the same key: %q, want it to pass", k)
	}
	if got := f.meter.Snapshot()["DynamoDB.PutItem"]; got != 1 || f.meter.Service("DynamoDB") != 1 {
		t.Errorf("a guard check cost %v, want one PutItem", f.meter.Snapshot())
	}
	replay := ledger.ID{Source: "github", Tenant: "acme", Key: "delivery-2-forged"}
	if k := claim(replay, "d1"); k != "delivery-1" {
		t.Errorf("the same body under a new key: %q, want the first key", k)
	}
	if k := claim(ledger.ID{Source: "github", Tenant: "globex", Key: "delivery-2-forged"}, "d1"); k != "delivery-2-forged" {
		t.Errorf("another tenant is another key space: %q", k)
	}
	if k := claim(replay, "d2"); k != "delivery-2-forged" {
		t.Errorf("another body: %q", k)
	}
	f.clock.Advance(25 * time.Hour)
	if k := claim(ledger.ID{Source: "github", Tenant: "acme", Key: "delivery-3"}, "d1"); k != "delivery-3" {
		t.Errorf("after the retention window: %q, want the guard expired", k)
	}
	// Guard items are not records.
	if recs, err := f.l.List(t.Context(), "", 0); err != nil || len(recs) != 0 {
		t.Errorf("List sees %d records (%v), want none: guard items must stay out of it", len(recs), err)
	}
}

// Validate refuses what DynamoDB would refuse, so nothing is half written:
// parts within MaxPartLen can still encode to a partition key over 2048
// bytes, since "#" is stored as "%23".
func TestValidateRefusesPartitionKeysOverDynamoDBsLimit(t *testing.T) {
	t.Parallel()
	long := ledger.ID{Source: strings.Repeat("#", 400), Tenant: strings.Repeat("#", 400), Key: "evt"}
	if n := len(long.PK()); n <= ledger.MaxPKBytes {
		t.Fatalf("test id encodes to %d bytes", n)
	}
	if err := long.Validate(); !errors.Is(err, ledger.ErrInvalid) || !strings.Contains(err.Error(), "2048") {
		t.Errorf("Validate(%d-byte key) = %v, want ErrInvalid naming the 2048-byte limit", len(long.PK()), err)
	}
	if err := (ledger.ID{Source: "s", Tenant: "t", Key: "evt_\xff"}).Validate(); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("invalid UTF-8 key: %v", err)
	}
	edge := ledger.ID{Source: strings.Repeat("a", 512), Tenant: strings.Repeat("b", 512), Key: strings.Repeat("c", 512)}
	if err := edge.Validate(); err != nil {
		t.Errorf("1536 plain bytes: %v", err)
	}
	f := setup(t)
	if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{ID: long}); !errors.Is(err, ledger.ErrInvalid) || f.meter.Service("DynamoDB") != 0 {
		t.Errorf("Create with an over-long key: %v after %v", err, f.meter.Snapshot())
	}
}

func TestCheckPayloadSize(t *testing.T) {
	t.Parallel()
	id := ledger.ID{Source: "stripe", Tenant: "acme", Key: "evt_1"}
	noise := make([]byte, 401*1024)
	rand.Read(noise)
	if err := ledger.CheckPayloadSize(id, noise); !errors.Is(err, ledger.ErrTooLarge) {
		t.Errorf("401 KiB of noise: %v, want ErrTooLarge", err)
	}
	if err := ledger.CheckPayloadSize(id, noise[:300*1024]); err != nil {
		t.Errorf("300 KiB: %v", err)
	}
	if err := ledger.CheckPayloadSize(id, []byte(strings.Repeat("abc", 1<<20))); err != nil {
		t.Errorf("3 MiB that compresses to a few KB: %v", err)
	}
	// The limit the check computes is what DynamoDB enforces: the largest
	// body it lets through is stored.
	f := setup(t)
	limit := 300 * 1024
	for n := limit; n < 420*1024; n += 1024 {
		if ledger.CheckPayloadSize(id, noise[:n]) != nil {
			limit = n - 1024
			break
		}
	}
	if err := f.l.PutPayload(t.Context(), id, noise[:limit], strings.Repeat("d", 64)); err != nil {
		t.Errorf("the largest body CheckPayloadSize admits (%d bytes) could not be stored: %v", limit, err)
	}
	if err := f.l.PutPayload(t.Context(), id, noise[:limit+2048], strings.Repeat("d", 64)); err == nil {
		t.Errorf("DynamoDB stored %d bytes: the check refuses bodies that would fit", limit+2048)
	}
}

func TestPutPayloadIfAbsent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := newID(t)
	stored, err := f.l.PutPayloadIfAbsent(t.Context(), id, []byte("first"), "")
	if err != nil || !stored {
		t.Fatalf("absent: %v %v", stored, err)
	}
	stored, err = f.l.PutPayloadIfAbsent(t.Context(), id, []byte("second"), "")
	if err != nil || stored {
		t.Fatalf("present: %v %v", stored, err)
	}
	if body, err := f.l.Payload(t.Context(), id); err != nil || string(body) != "first" {
		t.Errorf("payload %q %v, want the first body kept", body, err)
	}
}
