package ledger_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/ledger"
)

const deliveryTrace = "Root=1-6b1161f1-9fbe27bf175039d5222eae39;Parent=53995c3f42cd8ad8;Sampled=1"

// The record keeps its first delivery's trace header through its life; a
// duplicate's Create answers with it; a header too long to keep is refused
// before anything is written.
func TestRecordKeepsItsTrace(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := newID(t)
	rec, created, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "charge.succeeded", BodySHA256: "abc", Trace: deliveryTrace})
	if err != nil || !created || rec.Trace != deliveryTrace {
		t.Fatalf("create: %+v %v %v", rec, created, err)
	}
	dup, created, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "charge.succeeded", BodySHA256: "abc",
		Trace: strings.Replace(deliveryTrace, "1-6b1161f1", "1-6b1161f2", 1)})
	if err != nil || created || dup.Trace != deliveryTrace {
		t.Errorf("duplicate: trace %q created=%v err=%v, want the first delivery's", dup.Trace, created, err)
	}
	lease, err := f.l.Claim(t.Context(), id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	done, err := f.l.Complete(t.Context(), lease)
	if err != nil || done.Trace != deliveryTrace {
		t.Errorf("complete: trace %q, %v", done.Trace, err)
	}
	if got, err := f.l.Get(t.Context(), id); err != nil || got.Trace != deliveryTrace {
		t.Errorf("get: trace %q, %v", got.Trace, err)
	}
	f.meter.Reset()
	long := newID(t)
	_, _, err = f.l.Create(t.Context(), ledger.NewEvent{Key: long, Trace: strings.Repeat("x", ledger.MaxTrace+1)})
	if !errors.Is(err, ledger.ErrInvalid) || !strings.Contains(err.Error(), "trace header") {
		t.Errorf("a %d-byte trace header: %v, want ErrInvalid naming it", ledger.MaxTrace+1, err)
	}
	if calls := f.meter.Snapshot(); len(calls) != 0 {
		t.Errorf("a refused create reached DynamoDB: %v", calls)
	}
}
