package blob_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/ledger"
)

func setup(t *testing.T) (*blob.Store, *ledger.Ledger) {
	t.Helper()
	cfg := awstest.Config(t)
	st := &blob.Store{API: blob.NewClient(cfg), Bucket: awstest.Bucket(t, cfg), Prefix: "payloads/"}
	l, err := ledger.New(dynamodbClient(cfg), ledger.Options{Table: awstest.Table(t, cfg)})
	if err != nil {
		t.Fatal(err)
	}
	return st, l
}

func TestPutGetRoundTripsTwoMegabytes(t *testing.T) {
	t.Parallel()
	st, _ := setup(t)
	body := make([]byte, 2<<20+7)
	rand.Read(body)
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: awstest.Name("evt")}
	key := st.Key(id, "d")
	if err := st.Put(t.Context(), key, body); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(t.Context(), key)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("got %d bytes, %v; want the %d bytes written", len(got), err, len(body))
	}
	if _, err := st.Get(t.Context(), st.Key(ledger.Key{Source: "stripe", Tenant: "acme", ID: "never"}, "d")); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("missing object: %v, want ErrNotFound", err)
	}
}

// An object key is per identity and body: a key used again once its record
// expired names another object than the earlier event's, which the bucket's
// lifecycle removes only later.
func TestKeyIsFixedLengthAndPerEvent(t *testing.T) {
	t.Parallel()
	st := &blob.Store{Prefix: "payloads/"}
	long := ledger.Key{Source: "s", Tenant: "t", ID: strings.Repeat("#", ledger.MaxPartLen)}
	a, b := st.Key(ledger.Key{Source: "s", Tenant: "t", ID: "k"}, "d"), st.Key(ledger.Key{Source: "s", Tenant: "t#k", ID: ""}, "d")
	if a == b {
		t.Error("two identities share a key")
	}
	if st.Key(ledger.Key{Source: "s", Tenant: "t", ID: "k"}, "d2") == a {
		t.Error("two bodies under one identity share a key")
	}
	if k := st.Key(long, strings.Repeat("d", 64)); len(k) != len("payloads/")+64 || !strings.HasPrefix(k, "payloads/") {
		t.Errorf("key %q: want the prefix and 64 hex digits", k)
	}
}

func TestBodyReadsWhereTheRecordSays(t *testing.T) {
	t.Parallel()
	st, l := setup(t)
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: awstest.Name("evt")}
	inItem := ledger.Record{Key: id}
	if _, err := blob.Body(t.Context(), l, st, inItem); !errors.Is(err, blob.ErrMissing) {
		t.Fatalf("no payload item: %v, want ErrMissing", err)
	}
	if err := l.PutPayload(t.Context(), id, []byte("in the ledger"), ""); err != nil {
		t.Fatal(err)
	}
	if b, err := blob.Body(t.Context(), l, st, inItem); err != nil || string(b) != "in the ledger" {
		t.Fatalf("ledger payload: %q %v", b, err)
	}
	inStore := ledger.Record{Key: id, PayloadRef: st.Key(id, "d")}
	if _, err := blob.Body(t.Context(), l, st, inStore); !errors.Is(err, blob.ErrMissing) {
		t.Fatalf("no object: %v, want ErrMissing", err)
	}
	if err := st.Put(t.Context(), inStore.PayloadRef, []byte("in the store")); err != nil {
		t.Fatal(err)
	}
	if b, err := blob.Body(t.Context(), l, st, inStore); err != nil || string(b) != "in the store" {
		t.Fatalf("store payload: %q %v", b, err)
	}
	if _, err := blob.Body(t.Context(), l, nil, inStore); err == nil || errors.Is(err, blob.ErrMissing) {
		t.Errorf("no store configured: %v, want a configuration error", err)
	}
}
