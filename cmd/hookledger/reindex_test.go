package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/ledger"
)

// TestReindexFindsWhatAnOlderReleaseBuried: a record 0.1.0 buried has no
// dead-index keys, so list --status dead missed it after the upgrade;
// reindex puts it in the index once, and leaves live records alone.
func TestReindexFindsWhatAnOlderReleaseBuried(t *testing.T) {
	cfg := awstest.Config(t)
	db := dynamodb.NewFromConfig(cfg)
	table := awstest.Table(t, cfg)
	t.Setenv("AWS_ENDPOINT_URL", awstest.Endpoint(t))
	t.Setenv("HOOKLEDGER_TABLE", table)
	t.Setenv("HOOKLEDGER_PAYLOAD_BUCKET", "")
	ctx := t.Context()
	l, _ := ledger.New(db, ledger.Options{Table: table})
	create := func(id string) ledger.Key {
		t.Helper()
		key := ledger.Key{Source: "stripe", Tenant: "acme", ID: id}
		if _, _, err := l.Create(ctx, ledger.NewEvent{Key: key, Type: "invoice.paid", BodySHA256: "x"}); err != nil {
			t.Fatal(err)
		}
		return key
	}
	old := create("evt_buried_by_0_1_0")
	lease, err := l.Claim(ctx, old, time.Minute)
	if err == nil {
		_, err = l.Bury(ctx, lease, "permanent: card declined")
	}
	if err != nil {
		t.Fatal(err)
	}
	// As 0.1.0 left it: dead, without the dead index's keys.
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &table,
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: old.PK()}, "sk": &types.AttributeValueMemberS{Value: "r"}},
		UpdateExpression: aws.String("REMOVE dead_shard, dead_at")}); err != nil {
		t.Fatal(err)
	}
	create("evt_live")
	cmd := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(ctx, args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	if out := cmd("list", "--status", "dead"); strings.Contains(out, old.ID) {
		t.Fatalf("the unindexed record is listed before reindex; the test's premise is wrong:\n%s", out)
	}
	if out := cmd("reindex", "--dry-run"); !strings.Contains(out, ": 1 dead records outside the dead index") {
		t.Errorf("reindex --dry-run: %q, want 1 found", out)
	}
	if out := cmd("list", "--status", "dead"); strings.Contains(out, old.ID) {
		t.Errorf("--dry-run wrote:\n%s", out)
	}
	if out := cmd("reindex"); !strings.Contains(out, ": 1 dead records put into the dead index") {
		t.Errorf("reindex: %q, want 1 indexed", out)
	}
	if out := cmd("list", "--status", "dead"); !strings.Contains(out, old.ID) || strings.Contains(out, "evt_live") {
		t.Errorf("list --status dead after reindex:\n%s\nwant %s only", out, old.ID)
	}
	if out := cmd("reindex"); !strings.Contains(out, ": 0 dead records put into the dead index") {
		t.Errorf("reindex again: %q, want nothing more to do", out)
	}
	rec, err := l.Get(ctx, old)
	if err != nil || rec.Status != ledger.Dead {
		t.Errorf("the reindexed record: %+v, %v; want it dead as it was", rec.Status, err)
	}
}
