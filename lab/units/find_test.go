package units_test

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/lab/units"
	"github.com/hookledger/hookledger/ledger"
)

// findSeed is how many records TestFindReadsABoundedPage seeds: as many as
// a test run affords on the emulator (HOOKLEDGER_FIND_SEED raises it).
const findSeed = 20000

// seedRecords writes n done records (every 500th dead, every 1000th of
// tenant "rare") as the ledger stores them, 25 to a BatchWriteItem, created
// a second apart before now.
func seedRecords(t *testing.T, db *dynamodb.Client, table string, n, shards int) {
	t.Helper()
	now := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for start := range work {
				var reqs []types.WriteRequest
				for i := start; i < min(start+25, n); i++ {
					reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: seedItem(i, now, shards)}})
				}
				for len(reqs) > 0 {
					out, err := db.BatchWriteItem(t.Context(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
					if err != nil {
						errs <- err
						return
					}
					reqs = out.UnprocessedItems[table]
				}
			}
		})
	}
	for i := 0; i < n; i += 25 {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func seedItem(i int, now time.Time, shards int) map[string]types.AttributeValue {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	tenant := "acme"
	if i%1000 == 999 {
		tenant = "rare"
	}
	id := ledger.Key{Source: "stripe", Tenant: tenant, ID: fmt.Sprintf("evt_%07d", i)}
	created := now.Add(-time.Duration(i) * time.Second)
	item := map[string]types.AttributeValue{
		"pk": s(id.PK()), "sk": s("r"), "source": s(id.Source), "tenant": s(id.Tenant), "event_key": s(id.ID),
		"event_type": s("invoice.paid"), "status": s("done"), "attempts": n(1), "reclaims": n(0), "ver": n(3),
		"created_at": n(created.UnixMilli()), "updated_at": n(created.UnixMilli() + 300), "expires_at": n(now.Add(24 * time.Hour).Unix()),
		"due_shard": n(int64(i % shards)), "due_at": n(created.Add(ledger.DefaultReclaimAfter).UnixMilli()),
	}
	if i%500 == 250 {
		delete(item, "due_shard")
		delete(item, "due_at")
		item["status"], item["dead_shard"], item["dead_at"] = s("dead"), n(int64(i%shards)), n(created.UnixMilli()+300)
	}
	return item
}

// TestFindReadsABoundedPage: on a table of many records, each page Find
// returns costs a bounded number of requests and read units, the same on
// the tenth page as on the first, and far below what a scan reads. What
// bounds a page does not depend on the table's size (FindBudget, the
// shards), so the bound holds at 100,000 records and beyond; the seed is
// what one test run affords on the emulator.
func TestFindReadsABoundedPage(t *testing.T) {
	seed := findSeed
	if v, err := strconv.Atoi(os.Getenv("HOOKLEDGER_FIND_SEED")); err == nil && v > 0 {
		seed = v
	}
	raw := awstest.Config(t)
	table := awstest.Table(t, raw)
	db := dynamodb.NewFromConfig(raw)
	began := time.Now()
	seedRecords(t, db, table, seed, ledger.DefaultShards)
	t.Logf("seeded %d records in %v", seed, time.Since(began).Round(time.Millisecond))

	m := awstest.NewMeter()
	acc := &units.Accountant{Raw: db, Tables: map[string]units.TableSpec{table: units.LedgerTable}}
	l, err := ledger.New(dynamodb.NewFromConfig(awstest.Config(t, m.APIOption, acc.APIOption)), ledger.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	// A page of 50 reads at most: every stream's first chunk, refills, and
	// the page's records; never more than FindBudget entries and records.
	const maxQueries, maxRCU = 64, 60.0
	page := func(what string, q ledger.Query) ledger.Page {
		t.Helper()
		m.Reset()
		acc.Take()
		p, err := l.Find(t.Context(), q)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		calls, u := m.Snapshot(), acc.Take()
		t.Logf("%s: %d records, read %d, %d queries, %d batch gets, %.1f RCU", what, len(p.Records), p.Read, calls["DynamoDB.Query"], calls["DynamoDB.BatchGetItem"], u.RCU)
		if calls["DynamoDB.Scan"] > 0 || calls["DynamoDB.Query"] > maxQueries || calls["DynamoDB.BatchGetItem"] > 1+p.Read/ledger.MaxFindLimit ||
			p.Read > ledger.FindBudget || u.RCU > maxRCU {
			t.Errorf("%s: %v, %.1f RCU, read %d: want no scan, at most %d queries, %.0f RCU, %d reads", what, calls, u.RCU, p.Read, maxQueries, maxRCU, ledger.FindBudget)
		}
		return p
	}
	q := ledger.Query{Limit: 50}
	seen := map[ledger.Key]bool{}
	last := time.Now().Add(time.Hour)
	for i := 1; i <= 10; i++ {
		p := page(fmt.Sprintf("page %d", i), q)
		if len(p.Records) != 50 || p.Next == "" {
			t.Fatalf("page %d: %d records, next %q", i, len(p.Records), p.Next)
		}
		for _, r := range p.Records {
			if seen[r.Key] || r.CreatedAt.After(last) {
				t.Fatalf("page %d: %s again or out of order", i, r.Key)
			}
			seen[r.Key], last = true, r.CreatedAt
		}
		q.After = p.Next
	}
	// A narrow filter over the whole table: short pages, each bounded.
	q = ledger.Query{Tenant: "rare", Status: ledger.Done, Limit: 50}
	found := 0
	for i := 1; i <= 3; i++ {
		p := page(fmt.Sprintf("rare page %d", i), q)
		found += len(p.Records)
		if q.After = p.Next; q.After == "" {
			break
		}
	}
	if found == 0 {
		t.Error("the narrow filter found none of the rare tenant's records")
	}
	dead := page("dead", ledger.Query{Status: ledger.Dead, Limit: 50})
	if len(dead.Records) != min(50, seed/500) {
		t.Errorf("dead: %d records, want %d", len(dead.Records), min(50, seed/500))
	}

	// A scan would read every item instead.
	size := units.ItemSize(seedItem(1, time.Now(), ledger.DefaultShards))
	t.Logf("a scan of the %d records would read %d KB: %.0f RCU eventually consistent", seed, seed*size/1024, units.ReadUnits(seed*size, false))
}
