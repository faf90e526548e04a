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
			create(t, f, id)
			stored, err := f.l.EnsurePayload(t.Context(), id, tc.first, createdAs)
			if err != nil || !stored {
				t.Fatalf("absent: stored=%v err=%v", stored, err)
			}
			stored, err = f.l.EnsurePayload(t.Context(), id, tc.next, createdAs)
			if err != nil || stored {
				t.Fatalf("present: stored=%v err=%v, want false", stored, err)
			}
			if body, err := f.l.Payload(t.Context(), id); err != nil || !bytes.Equal(body, tc.first) {
				t.Errorf("payload %d bytes %v, want the first body (%d bytes) kept", len(body), err, len(tc.first))
			}
			// A payload PutPayloadIfAbsent wrote is recognised as well.
			id2 := newID(t)
			create(t, f, id2)
			if _, err := f.l.PutPayloadIfAbsent(t.Context(), id2, tc.first, createdAs.BodySHA256); err != nil {
				t.Fatal(err)
			}
			if stored, err := f.l.EnsurePayload(t.Context(), id2, tc.next, createdAs); err != nil || stored {
				t.Errorf("after PutPayloadIfAbsent: stored=%v err=%v, want false", stored, err)
			}
		})
	}
	if _, err := f.l.EnsurePayload(t.Context(), ledger.Key{Source: "s"}, []byte("x"), createdAs); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("invalid id: %v, want ErrInvalid", err)
	}
}

// EnsurePayload keeps a body only for a record that may still need it: not
// for one that is done (never re-driven nor replayed) or gone (no record,
// or one past its retention), and it does for a dead one (a replay follows).
// The processor calls it before claiming a redelivered message, which may
// find its event done or expired. An empty body is kept as an empty payload.
func TestEnsurePayloadOnlyForRecordsThatMayNeedIt(t *testing.T) {
	t.Parallel()
	f := setup(t, func(o *ledger.Options) { o.Retention = 24 * time.Hour })
	ctx := t.Context()
	done, dead, expired, empty := newID(t), newID(t), newID(t), newID(t)
	for _, id := range []ledger.Key{done, dead, expired, empty} {
		create(t, f, id)
	}
	for id, settle := range map[ledger.Key]func(ledger.Lease) error{
		done: func(l ledger.Lease) error { _, err := f.l.Complete(ctx, l); return err },
		dead: func(l ledger.Lease) error { _, err := f.l.Bury(ctx, l, "declined"); return err },
	} {
		lease, err := f.l.Claim(ctx, id, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := settle(lease); err != nil {
			t.Fatal(err)
		}
	}
	for name, tc := range map[string]struct {
		id   ledger.Key
		keep bool
	}{
		"done":      {done, false},
		"dead":      {dead, true},
		"no record": {newID(t), false},
		"empty":     {empty, true},
	} {
		body := []byte(`{"id":"x"}`)
		if name == "empty" {
			body = []byte{}
		}
		stored, err := f.l.EnsurePayload(ctx, tc.id, body, createdAs)
		if err != nil || stored != tc.keep {
			t.Errorf("%s: stored=%v err=%v, want stored=%v", name, stored, err, tc.keep)
		}
		got, err := f.l.Payload(ctx, tc.id)
		switch {
		case tc.keep && (err != nil || !bytes.Equal(got, body)):
			t.Errorf("%s: payload %q %v, want %q", name, got, err, body)
		case !tc.keep && !errors.Is(err, ledger.ErrNotFound):
			t.Errorf("%s: payload %q %v, want none", name, got, err)
		}
	}
	f.clock.Advance(25 * time.Hour) // past the record's retention; TTL has not removed it yet
	if stored, err := f.l.EnsurePayload(ctx, expired, []byte("late"), createdAs); err != nil || stored {
		t.Errorf("expired record: stored=%v err=%v, want nothing stored", stored, err)
	}
}

func TestPayloadRefIsRecorded(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := newID(t)
	ref := "payloads/" + strings.Repeat("a", 64)
	rec, created, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "t", BodySHA256: "abc", PayloadRef: ref})
	if err != nil || !created || rec.PayloadRef != ref {
		t.Fatalf("create: created=%v err=%v ref=%q", created, err, rec.PayloadRef)
	}
	got, err := f.l.Get(t.Context(), id)
	if err != nil || got.PayloadRef != ref {
		t.Fatalf("get: ref=%q err=%v, want %q", got.PayloadRef, err, ref)
	}
	// A duplicate sees the reference in the record it gets back.
	dup, created, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "t", BodySHA256: "abc", PayloadRef: ref})
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
	if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{Key: newID(t), PayloadRef: strings.Repeat("k", ledger.MaxPayloadRef+1)}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("over-long reference: %v, want ErrInvalid", err)
	}
}
