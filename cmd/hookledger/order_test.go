package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/ledger"
)

func TestOrderRefusesBadInput(t *testing.T) {
	t.Setenv("HOOKLEDGER_TABLE", "") // refused before the configuration is read
	checkUsage(t, []usageCase{
		{[]string{"order"}, "usage: hookledger order show|reset"},
		{[]string{"order", "drop"}, `unknown subcommand "drop"; want show or reset`},
		{[]string{"order", "show", "--source", "stripe", "--tenant", "acme"}, "give exactly one RESOURCE"},
		{[]string{"order", "show", "--source", "stripe", "--tenant", "acme", "sub_1", "--yes"}, "give exactly one RESOURCE after the flags"},
		{[]string{"order", "show", "--tenant", "acme", "sub_1"}, "give --source and --tenant"},
		{[]string{"order", "show", "--yes", "--source", "stripe", "--tenant", "acme", "sub_1"}, "flag provided but not defined: -yes"},
		{[]string{"order", "reset", "--source", "stripe", "--tenant", "acme", "sub_1"}, "add --yes to forget the position of sub_1"},
	})
}

// An operator finds a resource held by a position far in the future, and
// resets it: show prints the item (the position as a time, the event that
// took it and its status); reset refuses while that event's run is live
// and without --yes, then forgets it; the next event takes the resource as
// its first.
func TestOrderShowAndReset(t *testing.T) {
	cfg := awstest.Config(t)
	table := awstest.Table(t, cfg)
	t.Setenv("AWS_ENDPOINT_URL", awstest.Endpoint(t))
	t.Setenv("HOOKLEDGER_TABLE", table)
	t.Setenv("HOOKLEDGER_PAYLOAD_BUCKET", "")
	ctx := t.Context()
	l, _ := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: table})
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_2255"}
	if _, _, err := l.Create(ctx, ledger.NewEvent{Key: id, Type: "customer.subscription.updated", BodySHA256: "x"}); err != nil {
		t.Fatal(err)
	}
	lease, err := l.Claim(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	far := time.Date(2255, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := l.TakeOrder(ctx, lease, "sub_1", far.UnixNano(), false); err != nil {
		t.Fatal(err)
	}
	cmd := func(want int, args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(ctx, append([]string{"order"}, args...), &out, &errb); code != want {
			t.Fatalf("%v: exit %d, want %d; stderr %s", args, code, want, errb.String())
		}
		return out.String(), errb.String()
	}
	out, _ := cmd(0, "show", "--source", "stripe", "--tenant", "acme", "sub_1")
	var shown map[string]any
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatalf("show printed %s: %v", out, err)
	}
	if shown["position_as_time"] != "2255-01-01T00:00:00Z" || shown["event_id"] != "evt_2255" || shown["event_status"] != "processing" {
		t.Fatalf("show: %s", out)
	}
	// Its run is live: not reset.
	if _, errs := cmd(1, "reset", "--source", "stripe", "--tenant", "acme", "--yes", "sub_1"); !strings.Contains(errs, "event evt_2255 (processing) may still be applying") {
		t.Fatalf("reset of a live holder: %s", errs)
	}
	if _, err := l.Complete(ctx, lease); err != nil {
		t.Fatal(err)
	}
	out, _ = cmd(0, "reset", "--source", "stripe", "--tenant", "acme", "--yes", "sub_1")
	if !strings.Contains(out, `"reset": "forgotten`) || !strings.Contains(out, "2255-01-01") {
		t.Fatalf("reset: %s", out)
	}
	if _, errs := cmd(1, "show", "--source", "stripe", "--tenant", "acme", "sub_1"); !strings.Contains(errs, "no event of stripe/acme/sub_1 took a position") {
		t.Fatalf("show after the reset: %s", errs)
	}
	if _, errs := cmd(1, "reset", "--source", "stripe", "--tenant", "acme", "--yes", "sub_1"); !strings.Contains(errs, "no event of stripe/acme/sub_1") {
		t.Fatalf("second reset: %s", errs)
	}
	// The next real event takes the resource as its first.
	nid := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_now"}
	l.Create(ctx, ledger.NewEvent{Key: nid, Type: "customer.subscription.updated", BodySHA256: "x"})
	next, err := l.Claim(ctx, nid, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if took, err := l.TakeOrder(ctx, next, "sub_1", time.Now().UnixNano(), false); err != nil || took.Before != nil {
		t.Fatalf("the next event: %+v, %v", took, err)
	}
}

// inspect tells an event skipped as stale after a run that may have
// applied it from one that never ran.
func TestInspectShowsStaleAfterRun(t *testing.T) {
	cfg := awstest.Config(t)
	db := dynamodb.NewFromConfig(cfg)
	table := awstest.Table(t, cfg)
	t.Setenv("AWS_ENDPOINT_URL", awstest.Endpoint(t))
	t.Setenv("HOOKLEDGER_TABLE", table)
	t.Setenv("HOOKLEDGER_PAYLOAD_BUCKET", "")
	ctx := t.Context()
	past, _ := ledger.New(db, ledger.Options{Table: table, Now: func() time.Time { return time.Now().Add(-time.Hour) }})
	l, _ := ledger.New(db, ledger.Options{Table: table})
	for _, k := range []string{"evt_killed", "evt_never"} {
		id := ledger.Key{Source: "stripe", Tenant: "acme", ID: k}
		if _, _, err := past.Create(ctx, ledger.NewEvent{Key: id, Type: "customer.subscription.updated", BodySHA256: "x"}); err != nil {
			t.Fatal(err)
		}
		if k == "evt_killed" { // a run an hour ago, killed after its effect
			if _, err := past.Claim(ctx, id, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		lease, err := l.Claim(ctx, id, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Skip(ctx, lease, "skipped as stale"); err != nil {
			t.Fatal(err)
		}
	}
	for k, want := range map[string]string{"evt_killed": "stale_after_run", "evt_never": "stale"} {
		var out, errb bytes.Buffer
		if code := run(ctx, []string{"inspect", k}, &out, &errb); code != 0 {
			t.Fatalf("inspect %s: exit %d: %s", k, code, errb.String())
		}
		var got struct {
			SkippedAs string `json:"skipped_as"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.SkippedAs != want {
			t.Errorf("inspect %s: skipped_as %q, want %q (%v)\n%s", k, got.SkippedAs, want, err, out.String())
		}
	}
}
