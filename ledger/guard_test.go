package ledger_test

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/ledger"
)

// The replay guard: one body digest per source, tenant and event type within
// the retention window. The first delivery and its retries (same key) pass;
// the same body of the same type under another key is reported with the
// first key; another tenant, another body, another type or an expired guard
// pass.
func TestClaimBodyRefusesTheSameBodyUnderANewKey(t *testing.T) {
	t.Parallel()
	f := setup(t, func(o *ledger.Options) { o.Retention = 24 * time.Hour })
	first := ledger.Key{Source: "github", Tenant: "acme", ID: "delivery-1"}
	push := func(digest string) ledger.Identity { return ledger.Identity{Type: "push", BodySHA256: digest} }
	claim := func(id ledger.Key, ev ledger.Identity) string {
		t.Helper()
		k, err := f.l.ClaimBody(t.Context(), id, ev)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if k := claim(first, push("d1")); k != "delivery-1" {
		t.Fatalf("first delivery: %q", k)
	}
	f.meter.Reset()
	if k := claim(first, push("d1")); k != "delivery-1" {
		t.Errorf("a retry with the same key: %q, want it to pass", k)
	}
	if got := f.meter.Snapshot()["DynamoDB.PutItem"]; got != 1 || f.meter.Service("DynamoDB") != 1 {
		t.Errorf("a guard check cost %v, want one PutItem", f.meter.Snapshot())
	}
	replay := ledger.Key{Source: "github", Tenant: "acme", ID: "delivery-2-forged"}
	if k := claim(replay, push("d1")); k != "delivery-1" {
		t.Errorf("the same body under a new key: %q, want the first key", k)
	}
	if k := claim(ledger.Key{Source: "github", Tenant: "globex", ID: "delivery-2-forged"}, push("d1")); k != "delivery-2-forged" {
		t.Errorf("another tenant is another key space: %q", k)
	}
	if k := claim(replay, push("d2")); k != "delivery-2-forged" {
		t.Errorf("another body: %q", k)
	}
	f.clock.Advance(25 * time.Hour)
	if k := claim(ledger.Key{Source: "github", Tenant: "acme", ID: "delivery-3"}, push("d1")); k != "delivery-3" {
		t.Errorf("after the retention window: %q, want the guard expired", k)
	}
	// Guard items are not records.
	if recs, err := f.l.List(t.Context(), "", 0); err != nil || len(recs) != 0 {
		t.Errorf("List sees %d records (%v), want none: guard items must stay out of it", len(recs), err)
	}
}

// Two real events of different types can carry byte-identical bodies (a
// Shopify order's orders/create and the orders/updated sent right after
// it): the guard kept one digest per source and tenant and refused the
// second as a replay. It is scoped by type now; within one type the same
// body under a new id is still refused, and a type or digest with the
// separator in it cannot reach another pair's item.
func TestClaimBodyIsScopedByEventType(t *testing.T) {
	t.Parallel()
	f := setup(t)
	claim := func(key, typ, digest string) string {
		t.Helper()
		k, err := f.l.ClaimBody(t.Context(), ledger.Key{Source: "shopify", Tenant: "acme", ID: key}, ledger.Identity{Type: typ, BodySHA256: digest})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if k := claim("wh-1", "orders/create", "same"); k != "wh-1" {
		t.Fatalf("orders/create: %q", k)
	}
	if k := claim("wh-2", "orders/updated", "same"); k != "wh-2" {
		t.Errorf("orders/updated with the same body: %q, want it accepted as its own event", k)
	}
	if k := claim("wh-3", "orders/updated", "same"); k != "wh-2" {
		t.Errorf("orders/updated again under a new id: %q, want the replay reported with wh-2", k)
	}
	if k := claim("wh-4", "a#b", "c"); k != "wh-4" {
		t.Fatal(k)
	}
	if k := claim("wh-5", "a", "b#c"); k != "wh-5" {
		t.Errorf("type a, digest b#c took the item of type a#b, digest c: %q", k)
	}
	long := ledger.Key{Source: "shopify", Tenant: "acme", ID: "k"}
	if _, err := f.l.ClaimBody(t.Context(), long, ledger.Identity{Type: strings.Repeat("#", 700), BodySHA256: "d"}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("a type whose guard key would exceed DynamoDB's limit: %v, want ErrInvalid", err)
	}
}

// Validate refuses what DynamoDB would refuse, so nothing is half written:
// parts within MaxPartLen can still encode to a partition key over 2048
// bytes, since "#" is stored as "%23".
func TestValidateRefusesPartitionKeysOverDynamoDBsLimit(t *testing.T) {
	t.Parallel()
	long := ledger.Key{Source: strings.Repeat("#", 400), Tenant: strings.Repeat("#", 400), ID: "evt"}
	if n := len(long.PK()); n <= ledger.MaxPKBytes {
		t.Fatalf("test id encodes to %d bytes", n)
	}
	if err := long.Validate(); !errors.Is(err, ledger.ErrInvalid) || !strings.Contains(err.Error(), "2048") {
		t.Errorf("Validate(%d-byte key) = %v, want ErrInvalid naming the 2048-byte limit", len(long.PK()), err)
	}
	if err := (ledger.Key{Source: "s", Tenant: "t", ID: "evt_\xff"}).Validate(); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("invalid UTF-8 key: %v", err)
	}
	edge := ledger.Key{Source: strings.Repeat("a", 512), Tenant: strings.Repeat("b", 512), ID: strings.Repeat("c", 512)}
	if err := edge.Validate(); err != nil {
		t.Errorf("1536 plain bytes: %v", err)
	}
	f := setup(t)
	if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{Key: long}); !errors.Is(err, ledger.ErrInvalid) || f.meter.Service("DynamoDB") != 0 {
		t.Errorf("Create with an over-long key: %v after %v", err, f.meter.Snapshot())
	}
}

func TestCheckPayloadSize(t *testing.T) {
	t.Parallel()
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_1"}
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
