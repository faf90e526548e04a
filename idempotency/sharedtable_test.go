package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/idempotency"
	"github.com/hookledger/hookledger/ledger"
)

// TestDynamoDBSharesTheLedgerTable: a store on the hookledger ledger's
// table (TableInput's promise) keeps its records out of the ledger's way:
// the ledger's views (List, Counts) never return them, they never enter
// the due index the reclaimer reads, and the ledger's own records are
// untouched. Only this test knows package ledger; the package itself does
// not depend on it.
func TestDynamoDBSharesTheLedgerTable(t *testing.T) {
	t.Parallel()
	cfg := emulatorConfig(t)
	db := dynamodb.NewFromConfig(cfg)
	table := uniqueName("idem-shared")
	if err := ledger.CreateTable(t.Context(), db, table); err != nil { // the ledger's schema, due index included
		t.Fatal(err)
	}
	t.Cleanup(func() { db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table}) })
	ctx := t.Context()
	l, err := ledger.New(db, ledger.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: uniqueName("evt")}
	if _, created, err := l.Create(ctx, ledger.NewEvent{Key: id, Type: "charge.succeeded"}); err != nil || !created {
		t.Fatalf("create event: created=%v err=%v", created, err)
	}
	s, err := idempotency.NewStore(db, idempotency.Options{Table: table, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for range 2 { // a first call and its replay
		if got, _, err := idempotency.Do(ctx, s, "charge", id.ID, func(context.Context) (string, error) { return "charged", nil }); err != nil || got != "charged" {
			t.Fatalf("call on the ledger's table: %q %v", got, err)
		}
	}
	key, _ := idempotency.KeyOf("charge", id.ID)

	recs, err := l.List(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Key != id || recs[0].Status != ledger.Received {
		t.Fatalf("the ledger lists %+v, want only its own event, still received", recs)
	}
	counts, err := l.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if total := counts[ledger.Received] + counts[ledger.Processing] + counts[ledger.Done] + counts[ledger.Failed] + counts[ledger.Dead]; total != 1 {
		t.Fatalf("the ledger counts %v, want its one event", counts)
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "idem#" + key}, "sk": &types.AttributeValueMemberS{Value: "idem"}}})
	if err != nil || out.Item == nil {
		t.Fatalf("raw read of the record: %v", err)
	}
	for _, a := range []string{"due_shard", "due_at"} {
		if _, ok := out.Item[a]; ok {
			t.Errorf("the record carries %s, the due index's key", a)
		}
	}
}
