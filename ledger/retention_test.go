package ledger_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/ledger"
)

// expiresAt reads the expires_at attribute of the item (pk, sk) as stored.
func expiresAt(t *testing.T, f fixture, pk, sk string) time.Time {
	t.Helper()
	out, err := f.db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &f.table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := out.Item["expires_at"].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("item %s/%s has no expires_at: %v", pk, sk, out.Item)
	}
	sec, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(sec, 0).UTC()
}

// A source's retention decides when its record, its payload and its
// replay-guard digest expire; a source without one gets Retention. A
// delivery inside the window is a duplicate, one after it a new event.
func TestSourceRetention(t *testing.T) {
	t.Parallel()
	f := setup(t, func(o *ledger.Options) {
		o.Retention = 24 * time.Hour
		o.SourceRetention = map[string]time.Duration{"stripe": 96 * time.Hour}
	})
	now := f.clock.Now().Truncate(time.Second)
	stripe := ledger.Key{Source: "stripe", Tenant: "acme", ID: awstest.Name("evt")}
	github := ledger.Key{Source: "github", Tenant: "acme", ID: awstest.Name("gh")}
	for _, c := range []struct {
		id   ledger.Key
		want time.Duration
	}{{stripe, 96 * time.Hour}, {github, 24 * time.Hour}} {
		rec := create(t, f, c.id)
		if !rec.ExpiresAt.Equal(now.Add(c.want)) {
			t.Errorf("%s: record expires %v, want created + %v", c.id.Source, rec.ExpiresAt, c.want)
		}
		if got := expiresAt(t, f, c.id.PK(), "r"); !got.Equal(now.Add(c.want)) {
			t.Errorf("%s: stored record expires_at %v, want %v", c.id.Source, got, now.Add(c.want))
		}
		if err := f.l.PutPayload(t.Context(), c.id, []byte(`{"id":"x"}`), createdAs.BodySHA256); err != nil {
			t.Fatal(err)
		}
		if got := expiresAt(t, f, c.id.PK(), "p"); !got.Equal(now.Add(c.want)) {
			t.Errorf("%s: payload expires %v, want its record's %v", c.id.Source, got, now.Add(c.want))
		}
	}
	if _, err := f.l.ClaimBody(t.Context(), stripe, ledger.Identity{BodySHA256: "digest-1"}); err != nil {
		t.Fatal(err)
	}

	f.clock.Advance(95 * time.Hour)
	if _, created, err := f.l.Create(t.Context(), ledger.NewEvent{Key: stripe, BodySHA256: "abc"}); err != nil || created {
		t.Errorf("stripe at 95h: created=%v err=%v; want a duplicate inside its 96h", created, err)
	}
	if k, err := f.l.ClaimBody(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "replayed"}, ledger.Identity{BodySHA256: "digest-1"}); err != nil || k != stripe.ID {
		t.Errorf("replay guard at 95h: %q %v; want the first key, the digest still guarded", k, err)
	}
	if _, err := f.l.Get(t.Context(), github); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("github at 95h: %v; want expired after 24h", err)
	}
	f.clock.Advance(time.Hour)
	if _, created, err := f.l.Create(t.Context(), ledger.NewEvent{Key: stripe, BodySHA256: "abc"}); err != nil || !created {
		t.Errorf("stripe at 96h: created=%v err=%v; want a new event once the window passed", created, err)
	}
}

func TestSourceRetentionMustBePositive(t *testing.T) {
	t.Parallel()
	_, err := ledger.New(dynamodb.New(dynamodb.Options{Region: "us-east-1"}), ledger.Options{Table: "t", SourceRetention: map[string]time.Duration{"stripe": -time.Hour}})
	if !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("negative source retention: %v", err)
	}
}

// The processor keeps the payload of an event in trouble (EnsurePayload)
// with a ledger that knows nothing of per-source retention: the payload
// still expires with its record, whose expires_at it reads.
func TestEnsurePayloadExpiresWithItsRecord(t *testing.T) {
	t.Parallel()
	f := setup(t, func(o *ledger.Options) {
		o.Retention = 24 * time.Hour
		o.SourceRetention = map[string]time.Duration{"stripe": 240 * time.Hour}
	})
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: awstest.Name("evt")}
	rec := create(t, f, id)
	processor, err := ledger.New(f.db, ledger.Options{Table: f.table, Retention: 24 * time.Hour, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Hour)
	if stored, err := processor.EnsurePayload(t.Context(), id, []byte(`{"id":"x"}`), createdAs); err != nil || !stored {
		t.Fatalf("ensure payload: %v %v", stored, err)
	}
	if got := expiresAt(t, f, id.PK(), "p"); !got.Equal(rec.ExpiresAt) {
		t.Errorf("payload kept by the processor expires %v, want its record's %v (240h), not the processor's 24h", got, rec.ExpiresAt)
	}
	// No record (it expired, or was never written): nothing is written; a
	// payload then would outlive any record.
	orphan := ledger.Key{Source: "stripe", Tenant: "acme", ID: awstest.Name("orphan")}
	if stored, err := processor.EnsurePayload(t.Context(), orphan, []byte(`{}`), createdAs); err != nil || stored {
		t.Fatalf("no record: stored=%v err=%v, want nothing stored", stored, err)
	}
}
