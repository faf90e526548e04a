package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/console"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/version"
)

// TestLedgerCommandsRefuseBadInput: list --limit -5 used to scan the whole
// table, and inspect with an empty source, tenant or key exited 1 with a
// ledger error.
func TestLedgerCommandsRefuseBadInput(t *testing.T) {
	t.Setenv("HOOKLEDGER_TABLE", "") // refused before the configuration is read
	checkUsage(t, []usageCase{
		{[]string{"list", "--limit", "-5"}, "--limit -5: want a positive number of records, or 0 for all"},
		{[]string{"list", "dead"}, "unexpected argument"},
		{[]string{"list", "--status", "gone"}, `unknown status "gone"`},
		{[]string{"list", "--since", "yesterday"}, `time "yesterday": want RFC 3339`},
		{[]string{"list", "--since", "1h", "--until", "2h"}, "--since must be before --until"},
		{[]string{"inspect", "--source", "", "evt_1"}, "--source is empty"},
		{[]string{"inspect", "--tenant", "", "evt_1"}, "--tenant is empty"},
		{[]string{"inspect", ""}, "ID is empty"},
	})
}

// TestListWithoutAWSSaysWhatToSet: list without AWS_ENDPOINT_URL or
// credentials printed "list: list : ledger: unavailable: ... no EC2 IMDS
// role found" and no hint.
func TestListWithoutAWSSaysWhatToSet(t *testing.T) {
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": "", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": t.TempDir() + "/none", "AWS_SHARED_CREDENTIALS_FILE": t.TempDir() + "/none",
		"AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_REGION": "us-east-1", "AWS_LAMBDA_FUNCTION_NAME": "",
		"HOOKLEDGER_TABLE": "hookledger", "HOOKLEDGER_PAYLOAD_BUCKET": "",
	} {
		t.Setenv(k, v)
	}
	var errb bytes.Buffer
	if code := run(t.Context(), []string{"list"}, io.Discard, &errb); code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, errb.String())
	}
	s := errb.String()
	if !strings.HasPrefix(s, "list: find in table hookledger: due index shard 0: ") || strings.Contains(s, "list :") || strings.Count(s, "list") != 1 {
		t.Errorf("stderr %q: want one list: prefix", s)
	}
	if !strings.Contains(s, "export AWS_ENDPOINT_URL=http://localhost:4566") || !strings.Contains(s, "AWS credentials") {
		t.Errorf("stderr %q: no hint", s)
	}
}

func TestAWSHint(t *testing.T) {
	t.Parallel()
	env := func(ep string) func(string) string {
		return func(k string) string {
			if k == "AWS_ENDPOINT_URL" {
				return ep
			}
			return ""
		}
	}
	for _, tc := range []struct {
		err  error
		ep   string
		want string
	}{
		{errors.New("get credentials: failed to refresh cached credentials, no EC2 IMDS role found"), "", "export AWS_ENDPOINT_URL=http://localhost:4566"},
		{errors.New(`Post "http://127.0.0.1:9/": dial tcp 127.0.0.1:9: connect: connection refused`), "http://127.0.0.1:9", "nothing answers at AWS_ENDPOINT_URL=http://127.0.0.1:9"},
		{errors.New("operation error DynamoDB: Scan, UnrecognizedClientException"), "", "AWS credentials"},
		{errors.New("ResourceNotFoundException: table"), "http://127.0.0.1:9", ""},
		{nil, "", ""},
	} {
		got := awsHint(tc.err, env(tc.ep))
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("awsHint(%v, %q) = %q, want %q", tc.err, tc.ep, got, tc.want)
		}
	}
}

// TestInspectAndListShowTheRunCounters: the operator sees, beside the runs
// begun, how many the handler failed (what HOOKLEDGER_MAX_ATTEMPTS counts)
// and how many were interrupted (what it does not), and when the reclaimer
// gives up on an event that is not done.
func TestInspectAndListShowTheRunCounters(t *testing.T) {
	cfg := awstest.Config(t)
	db := dynamodb.NewFromConfig(cfg)
	table := awstest.Table(t, cfg)
	t.Setenv("AWS_ENDPOINT_URL", awstest.Endpoint(t))
	t.Setenv("HOOKLEDGER_TABLE", table)
	t.Setenv("HOOKLEDGER_PAYLOAD_BUCKET", "")
	ctx := t.Context()
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_counted"}
	// A worker two hours ago claimed it and died; one now fails it.
	past, _ := ledger.New(db, ledger.Options{Table: table, Now: func() time.Time { return time.Now().Add(-2 * time.Hour) }})
	if _, _, err := past.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := past.Claim(ctx, id, time.Minute); err != nil {
		t.Fatal(err)
	}
	l, _ := ledger.New(db, ledger.Options{Table: table})
	lease, err := l.Claim(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Fail(ctx, lease, "charge: payments API answered 503", time.Minute); err != nil {
		t.Fatal(err)
	}

	var out, errb bytes.Buffer
	if code := run(ctx, []string{"list"}, &out, &errb); code != 0 {
		t.Fatalf("list: exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0])[5:9], " ") != "ATTEMPTS FAILED INTERRUPTED RECLAIMS" {
		t.Fatalf("list:\n%s", out.String())
	}
	if got := strings.Join(strings.Fields(lines[1])[4:9], " "); got != "failed 2 1 1 0" {
		t.Fatalf("list row %q: want status failed, 2 attempts, 1 failed, 1 interrupted, 0 reclaims", got)
	}

	out.Reset()
	if code := run(ctx, []string{"inspect", "evt_counted"}, &out, &errb); code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, errb.String())
	}
	var got struct {
		Record    ledger.Record `json:"record"`
		Runs      string        `json:"runs"`
		GivesUpAt time.Time     `json:"gives_up_at"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("inspect output %s: %v", out.String(), err)
	}
	if r := got.Record; r.Attempts != 2 || r.Failures != 1 || r.Interrupted != 1 {
		t.Fatalf("inspect record: %d attempts, %d failures, %d interrupted\n%s", r.Attempts, r.Failures, r.Interrupted, out.String())
	}
	if !strings.Contains(got.Runs, "1 run failed by the handler") || !strings.Contains(got.Runs, "1 run interrupted") {
		t.Errorf("runs %q", got.Runs)
	}
	if want := got.Record.ExpiresAt.Add(-reclaimer.ExpiryMargin); !got.GivesUpAt.Equal(want) {
		t.Errorf("gives_up_at %v, want a day before the expiry (%v)", got.GivesUpAt, want)
	}
}

// TestListFindsThroughTheIndex: list's filters select what they say, newest
// first, and --limit stops with a hint when more match.
func TestListFindsThroughTheIndex(t *testing.T) {
	cfg := awstest.Config(t)
	db := dynamodb.NewFromConfig(cfg)
	table := awstest.Table(t, cfg)
	t.Setenv("AWS_ENDPOINT_URL", awstest.Endpoint(t))
	t.Setenv("HOOKLEDGER_TABLE", table)
	t.Setenv("HOOKLEDGER_PAYLOAD_BUCKET", "")
	ctx := t.Context()
	at := time.Now().Add(-time.Hour)
	l, _ := ledger.New(db, ledger.Options{Table: table, Now: func() time.Time { return at }})
	seed := func(src, tenant, id, typ string, dead bool) {
		t.Helper()
		key := ledger.Key{Source: src, Tenant: tenant, ID: id}
		if _, _, err := l.Create(ctx, ledger.NewEvent{Key: key, Type: typ, BodySHA256: "x"}); err != nil {
			t.Fatal(err)
		}
		if dead {
			lease, err := l.Claim(ctx, key, time.Minute)
			if err == nil {
				_, err = l.Bury(ctx, lease, "permanent: card declined\nat line 2")
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		at = at.Add(time.Minute)
	}
	seed("stripe", "acme", "evt_1", "invoice.paid", false)
	seed("stripe", "acme", "evt_2", "invoice.paid", true)
	seed("stripe", "zeta", "evt_3", "charge.refunded", true)
	seed("github", "acme", "gh_4", "push", false)
	ids := func(args ...string) ([]string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(ctx, append([]string{"list"}, args...), &out, &errb); code != 0 {
			t.Fatalf("list %v: exit %d: %s", args, code, errb.String())
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
			got = append(got, strings.Fields(line)[2])
		}
		return got, errb.String()
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "gh_4 evt_3 evt_2 evt_1"},
		{[]string{"--source", "stripe", "--status", "dead"}, "evt_3 evt_2"},
		{[]string{"--tenant", "acme", "--type", "invoice.paid"}, "evt_2 evt_1"},
		{[]string{"--since", "59m30s", "--until", "57m30s"}, "evt_3 evt_2"},
		{[]string{"--source", "nobody"}, ""},
	} {
		if got, _ := ids(tc.args...); strings.Join(got, " ") != tc.want {
			t.Errorf("list %v: %v, want %s", tc.args, got, tc.want)
		}
	}
	got, hint := ids("--limit", "2")
	if strings.Join(got, " ") != "gh_4 evt_3" || !strings.Contains(hint, "more records match; raise --limit") {
		t.Errorf("list --limit 2: %v, stderr %q", got, hint)
	}
}

// TestInspectShowsDownstreamKeysRunsAndBody: inspect names each step's
// downstream key (what a user had to compute to resolve an indeterminate
// step), keeps the run history in the record, and prints the body as text
// only with --body, cut at its cap.
func TestInspectShowsDownstreamKeysRunsAndBody(t *testing.T) {
	cfg := awstest.Config(t)
	db := dynamodb.NewFromConfig(cfg)
	table := awstest.Table(t, cfg)
	t.Setenv("AWS_ENDPOINT_URL", awstest.Endpoint(t))
	t.Setenv("HOOKLEDGER_TABLE", table)
	t.Setenv("HOOKLEDGER_PAYLOAD_BUCKET", "")
	ctx := t.Context()
	l, _ := ledger.New(db, ledger.Options{Table: table})
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_steps"}
	body := []byte(`{"note":"<script>x</script>` + strings.Repeat("a", console.BodyCap) + `"}`)
	if _, _, err := l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := l.PutPayload(ctx, id, body, "x"); err != nil {
		t.Fatal(err)
	}
	lease, err := l.Claim(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.SaveSteps(ctx, lease, ledger.StepChange{Name: "charge", Status: ledger.StepStarted}); err != nil {
		t.Fatal(err)
	}
	inspect := func(args ...string) map[string]json.RawMessage {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(ctx, append([]string{"inspect"}, append(args, "evt_steps")...), &out, &errb); code != 0 {
			t.Fatalf("inspect: exit %d: %s", code, errb.String())
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("inspect output %s: %v", out.String(), err)
		}
		return got
	}
	got := inspect()
	var keys map[string]string
	json.Unmarshal(got["downstream_keys"], &keys)
	if want := engine.DownstreamKey("stripe", "acme", "evt_steps", "charge"); keys["charge"] != want {
		t.Errorf("downstream_keys %v, want charge: %s", keys, want)
	}
	var rec ledger.Record
	json.Unmarshal(got["record"], &rec)
	if len(rec.Runs) != 1 || rec.Runs[0].Start.IsZero() || !rec.Runs[0].End.IsZero() {
		t.Errorf("record runs %+v: want the one run, begun and not ended", rec.Runs)
	}
	if _, ok := got["body"]; ok {
		t.Error("inspect printed the body without --body")
	}
	got = inspect("--body")
	var text string
	json.Unmarshal(got["body"], &text)
	if len(text) != console.BodyCap || !strings.HasPrefix(text, `{"note":"<script>x</script>aaa`) || string(got["body_truncated"]) != "true" {
		t.Errorf("--body: %d bytes starting %.40q, truncated %s; want the first %d bytes as text, truncated", len(text), text, got["body_truncated"], console.BodyCap)
	}
}

// TestInspectCountsFormat1Records: a record the code before 0.1.0 failed
// three times, then this release failed three times more, shows six
// failures (it showed three: the older code kept no failures counter), and
// inspect says the format and release of the code that last wrote it.
func TestInspectCountsFormat1Records(t *testing.T) {
	cfg := awstest.Config(t)
	db := dynamodb.NewFromConfig(cfg)
	table := awstest.Table(t, cfg)
	t.Setenv("AWS_ENDPOINT_URL", awstest.Endpoint(t))
	t.Setenv("HOOKLEDGER_TABLE", table)
	t.Setenv("HOOKLEDGER_PAYLOAD_BUCKET", "")
	ctx := t.Context()
	now := time.Now()
	n := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	put := func(id string) ledger.Key {
		t.Helper()
		key := ledger.Key{Source: "stripe", Tenant: "acme", ID: id}
		// As the older code left it: failed on its third run, no counters, no format.
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: map[string]types.AttributeValue{
			"pk": str(key.PK()), "sk": str("r"), "source": str("stripe"), "tenant": str("acme"), "event_key": str(id),
			"event_type": str("invoice.paid"), "status": str("failed"), "attempts": n(3), "reclaims": n(0), "ver": n(7),
			"created_at": n(now.Add(-time.Hour).UnixMilli()), "updated_at": n(now.UnixMilli()), "expires_at": n(now.Add(48 * time.Hour).Unix()),
			"due_shard": n(0), "due_at": n(now.UnixMilli()), "last_error": str("payments API answered 503"),
		}}); err != nil {
			t.Fatal(err)
		}
		return key
	}
	inspect := func(id string) (rec ledger.Record, runs string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(ctx, []string{"inspect", id}, &out, &errb); code != 0 {
			t.Fatalf("inspect: exit %d: %s", code, errb.String())
		}
		var got struct {
			Record ledger.Record `json:"record"`
			Runs   string        `json:"runs"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("inspect output %s: %v", out.String(), err)
		}
		return got.Record, got.Runs
	}

	untouched := put("evt_failed_before")
	rec, runs := inspect(untouched.ID)
	if rec.Format != 1 || rec.Release != "" || !strings.HasPrefix(runs, "3 runs begun: 3 runs failed by the handler") || !strings.Contains(runs, "format 1") {
		t.Errorf("untouched: format %d, release %q, runs %q", rec.Format, rec.Release, runs)
	}

	id := put("evt_failed_across")
	l, _ := ledger.New(db, ledger.Options{Table: table})
	for range 3 {
		lease, err := l.Claim(ctx, id, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Fail(ctx, lease, "payments API answered 503", 0); err != nil {
			t.Fatal(err)
		}
	}
	rec, runs = inspect(id.ID)
	if !strings.HasPrefix(runs, "6 runs begun: 6 runs failed by the handler") || !strings.Contains(runs, "0 runs interrupted") {
		t.Errorf("runs %q, want 6 begun, 6 failed, 0 interrupted", runs)
	}
	if rec.Format != ledger.Format || rec.Release != version.Version {
		t.Errorf("format %d, release %q; want %d, %s", rec.Format, rec.Release, ledger.Format, version.Version)
	}
}
