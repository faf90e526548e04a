package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/ledger"
)

// noOldUpdate hides ALL_OLD from failed conditional updates, as an endpoint
// that omits it does.
type noOldUpdate struct{ *dynamodb.Client }

func (c noOldUpdate) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := c.Client.UpdateItem(ctx, in, o...)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		ccf.Item = nil
	}
	return out, err
}

// ClaimEvent takes the record only for the event the message names: same
// type, same body digest. Any other message (an earlier event's under a key
// used again, one with another type or none, one without a digest under a
// record with one) is refused with ErrNotThisEvent, whatever the record's
// status, in the one conditional write, and the record is left exactly as
// it was. A record written without a digest takes any digest, never
// another type.
func TestClaimEventRefusesAnotherEvent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	same := createdAs
	for name, tc := range map[string]struct {
		ev     ledger.Identity
		status ledger.Status // the record's, before the claim
	}{
		"another digest":             {ledger.Identity{Type: same.Type, BodySHA256: "an-earlier-body"}, ledger.Received},
		"no digest":                  {ledger.Identity{Type: same.Type}, ledger.Received},
		"another type":               {ledger.Identity{Type: "charge.refunded", BodySHA256: same.BodySHA256}, ledger.Received},
		"no type":                    {ledger.Identity{BodySHA256: same.BodySHA256}, ledger.Received},
		"another digest, done":       {ledger.Identity{Type: same.Type, BodySHA256: "an-earlier-body"}, ledger.Done},
		"another digest, leased":     {ledger.Identity{Type: same.Type, BodySHA256: "an-earlier-body"}, ledger.Processing},
		"another digest, dead":       {ledger.Identity{Type: same.Type, BodySHA256: "an-earlier-body"}, ledger.Dead},
		"another type, failed":       {ledger.Identity{Type: "x", BodySHA256: same.BodySHA256}, ledger.Failed},
		"another digest, no ALL_OLD": {ledger.Identity{Type: same.Type, BodySHA256: "an-earlier-body"}, ledger.Received},
	} {
		t.Run(name, func(t *testing.T) {
			id := newID(t)
			create(t, f, id)
			switch tc.status {
			case ledger.Done, ledger.Dead, ledger.Processing, ledger.Failed:
				lease, err := f.l.ClaimEvent(ctx, id, time.Minute, same)
				if err != nil {
					t.Fatal(err)
				}
				switch tc.status {
				case ledger.Done:
					_, err = f.l.Complete(ctx, lease)
				case ledger.Dead:
					_, err = f.l.Bury(ctx, lease, "declined")
				case ledger.Failed:
					_, err = f.l.Fail(ctx, lease, "timeout", 0)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			before, err := f.l.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			l := f.l
			if name == "another digest, no ALL_OLD" {
				if l, err = ledger.New(noOldUpdate{f.db}, ledger.Options{Table: f.table, Now: f.clock.Now}); err != nil {
					t.Fatal(err)
				}
			}
			f.meter.Reset()
			_, err = l.ClaimEvent(ctx, id, time.Minute, tc.ev)
			var se *ledger.StateError
			if !errors.Is(err, ledger.ErrNotThisEvent) || !errors.As(err, &se) || se.Record.BodySHA256 != same.BodySHA256 || se.Record.EventType != same.Type {
				t.Fatalf("claim: %v, want ErrNotThisEvent carrying the record", err)
			}
			if w := f.meter.Snapshot()["DynamoDB.UpdateItem"]; w != 1 {
				t.Errorf("the refusal cost %d UpdateItem calls, want the one claim", w)
			}
			after, err := f.l.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if after.Version != before.Version || after.Attempts != before.Attempts || after.Status != before.Status || after.LeaseOwner != before.LeaseOwner {
				t.Errorf("the record changed: %+v, was %+v", after, before)
			}
		})
	}

	// Its own event is claimed as Claim does.
	id := newID(t)
	create(t, f, id)
	if lease, err := f.l.ClaimEvent(ctx, id, time.Minute, same); err != nil || lease.Record.Attempts != 1 {
		t.Fatalf("own event: %+v %v", lease.Record, err)
	}
	// A record without a digest takes any digest, and only its own type;
	// a typeless record only a typeless message.
	legacy := newID(t)
	if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: legacy, Type: "invoice.paid"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.ClaimEvent(ctx, legacy, time.Minute, ledger.Identity{Type: "invoice.created", BodySHA256: "d"}); !errors.Is(err, ledger.ErrNotThisEvent) {
		t.Errorf("a record without a digest, another type: %v, want ErrNotThisEvent", err)
	}
	if _, err := f.l.ClaimEvent(ctx, legacy, time.Minute, ledger.Identity{Type: "invoice.paid", BodySHA256: "d"}); err != nil {
		t.Errorf("a record without a digest, its type: %v", err)
	}
	typeless := newID(t)
	if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: typeless, BodySHA256: "d"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.ClaimEvent(ctx, typeless, time.Minute, ledger.Identity{Type: "sms", BodySHA256: "d"}); !errors.Is(err, ledger.ErrNotThisEvent) {
		t.Errorf("a typeless record, a typed message: %v, want ErrNotThisEvent", err)
	}
	if _, err := f.l.ClaimEvent(ctx, typeless, time.Minute, ledger.Identity{BodySHA256: "d"}); err != nil {
		t.Errorf("a typeless record, a typeless message: %v", err)
	}
}

// A key used again once its record expired: the earlier event's payload
// item outlives it until TTL deletes it, days later. EnsurePayload kept it
// (a payload was there), and every reader took it for the newer record's
// body: the reclaimer re-drove it and replay ran it under the newer
// record's identity. PayloadOf and Payloads now refuse it, and EnsurePayload
// writes the newer body over it; a message of another event is refused
// before anything is written.
func TestAnEarlierEventsPayloadIsNeverTheNewerRecords(t *testing.T) {
	t.Parallel()
	f := setup(t, func(o *ledger.Options) { o.Retention = 24 * time.Hour })
	ctx := t.Context()
	id := newID(t)
	older := ledger.Identity{Type: "charge.succeeded", BodySHA256: "older"}
	if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: id, Type: older.Type, BodySHA256: older.BodySHA256}); err != nil {
		t.Fatal(err)
	}
	// Stored compressed; the newer body is not.
	olderBody := []byte(`{"body":"older","pad":"` + strings.Repeat("x", 2000) + `"}`)
	if err := f.l.PutPayload(ctx, id, olderBody, older.BodySHA256); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(25 * time.Hour) // expired; TTL has not removed the items
	newer := ledger.Identity{Type: "charge.succeeded", BodySHA256: "newer"}
	rec, created, err := f.l.Create(ctx, ledger.NewEvent{Key: id, Type: newer.Type, BodySHA256: newer.BodySHA256})
	if err != nil || !created {
		t.Fatalf("the key used again: created=%v err=%v", created, err)
	}
	if b, err := f.l.PayloadOf(ctx, rec); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("PayloadOf: %q %v, want ErrNotFound (the earlier event's body)", b, err)
	}
	if got, err := f.l.Payloads(ctx, []ledger.Record{rec}); err != nil || len(got) != 0 {
		t.Errorf("Payloads: %q %v, want none", got, err)
	}
	// The earlier event's message is not kept as the newer one's body; one
	// without a digest is not either.
	for _, ev := range []ledger.Identity{older, {Type: newer.Type}} {
		if stored, err := f.l.EnsurePayload(ctx, id, olderBody, ev); stored || !errors.Is(err, ledger.ErrNotThisEvent) {
			t.Errorf("EnsurePayload with %+v: stored=%v err=%v, want ErrNotThisEvent", ev, stored, err)
		}
	}
	// The newer event's own body replaces the earlier one's.
	if stored, err := f.l.EnsurePayload(ctx, id, []byte(`{"body":"newer"}`), newer); err != nil || !stored {
		t.Fatalf("EnsurePayload of the newer body: stored=%v err=%v", stored, err)
	}
	if b, err := f.l.PayloadOf(ctx, rec); err != nil || string(b) != `{"body":"newer"}` {
		t.Errorf("PayloadOf: %q %v, want the newer body", b, err)
	}
	if stored, err := f.l.EnsurePayload(ctx, id, []byte(`{"body":"newer"}`), newer); err != nil || stored {
		t.Errorf("EnsurePayload again: stored=%v err=%v, want it kept already", stored, err)
	}

	// An unmarked item (written before payloads carried the digest) that
	// expires before the record was created is an earlier event's too.
	legacy := newID(t)
	if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: legacy, Type: older.Type, BodySHA256: older.BodySHA256}); err != nil {
		t.Fatal(err)
	}
	if err := f.l.PutPayload(ctx, legacy, []byte(`{"body":"older"}`), ""); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(25 * time.Hour)
	rec, _, err = f.l.Create(ctx, ledger.NewEvent{Key: legacy, Type: newer.Type, BodySHA256: newer.BodySHA256})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := f.l.PayloadOf(ctx, rec); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("an unmarked earlier payload: %q %v, want ErrNotFound", b, err)
	}
	if stored, err := f.l.EnsurePayload(ctx, legacy, []byte(`{"body":"newer, compressible, compressible, compressible"}`), newer); err != nil || !stored {
		t.Errorf("EnsurePayload over an unmarked earlier payload: stored=%v err=%v", stored, err)
	}
	if b, err := f.l.PayloadOf(ctx, rec); err != nil || string(b) != `{"body":"newer, compressible, compressible, compressible"}` {
		t.Errorf("PayloadOf: %q %v, want the newer body", b, err)
	}
}
