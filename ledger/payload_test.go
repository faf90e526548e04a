package ledger_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/ledger"
)

func TestEnsurePayloadStoresOnlyWhenAbsent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	big := bytes.Repeat([]byte(`{"line":"a repeated line item that compresses"},`), 200)
	for _, tc := range []struct {
		name        string
		first, next []byte
	}{
		{"small, stored raw", []byte("first"), []byte("second")},
		{"large, stored gzip", big, append([]byte("other"), big...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := newID(t)
			stored, err := f.l.EnsurePayload(t.Context(), id, tc.first)
			if err != nil || !stored {
				t.Fatalf("absent: stored=%v err=%v", stored, err)
			}
			stored, err = f.l.EnsurePayload(t.Context(), id, tc.next)
			if err != nil || stored {
				t.Fatalf("present: stored=%v err=%v, want false", stored, err)
			}
			if body, err := f.l.Payload(t.Context(), id); err != nil || !bytes.Equal(body, tc.first) {
				t.Errorf("payload %d bytes %v, want the first body (%d bytes) kept", len(body), err, len(tc.first))
			}
			// A payload PutPayloadIfAbsent wrote is recognised as well.
			id2 := newID(t)
			if _, err := f.l.PutPayloadIfAbsent(t.Context(), id2, tc.first); err != nil {
				t.Fatal(err)
			}
			if stored, err := f.l.EnsurePayload(t.Context(), id2, tc.next); err != nil || stored {
				t.Errorf("after PutPayloadIfAbsent: stored=%v err=%v, want false", stored, err)
			}
		})
	}
	if _, err := f.l.EnsurePayload(t.Context(), ledger.ID{Source: "s"}, []byte("x")); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("invalid id: %v, want ErrInvalid", err)
	}
}

func TestPayloadRefIsRecorded(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := newID(t)
	ref := "payloads/" + strings.Repeat("a", 64)
	rec, created, err := f.l.Create(t.Context(), ledger.NewEvent{ID: id, Type: "t", BodySHA256: "abc", PayloadRef: ref})
	if err != nil || !created || rec.PayloadRef != ref {
		t.Fatalf("create: created=%v err=%v ref=%q", created, err, rec.PayloadRef)
	}
	got, err := f.l.Get(t.Context(), id)
	if err != nil || got.PayloadRef != ref {
		t.Fatalf("get: ref=%q err=%v, want %q", got.PayloadRef, err, ref)
	}
	// A duplicate sees the reference in the record it gets back.
	dup, created, err := f.l.Create(t.Context(), ledger.NewEvent{ID: id, Type: "t", BodySHA256: "abc", PayloadRef: ref})
	if err != nil || created || dup.PayloadRef != ref {
		t.Fatalf("duplicate: created=%v err=%v ref=%q", created, err, dup.PayloadRef)
	}
	// Status changes keep it.
	lease, err := f.l.Claim(t.Context(), id, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if done, err := f.l.Complete(t.Context(), lease); err != nil || done.PayloadRef != ref {
		t.Fatalf("complete: ref=%q err=%v", done.PayloadRef, err)
	}
	if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{ID: newID(t), PayloadRef: strings.Repeat("k", ledger.MaxPayloadRef+1)}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("over-long reference: %v, want ErrInvalid", err)
	}
}
