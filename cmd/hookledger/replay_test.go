package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

type replayFixture struct {
	l        *ledger.Ledger
	old      *ledger.Ledger // the same table, with a clock two days back
	sq       *sqs.Client
	qurl     string
	dlq      string
	out, err *bytes.Buffer
	r        *replayer
}

func replaySetup(t *testing.T) *replayFixture {
	t.Helper()
	cfg := awstest.Config(t)
	db := dynamodb.NewFromConfig(cfg)
	table := awstest.Name("chaos-replay")
	if err := ledger.CreateTable(t.Context(), db, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table}) })
	qurl, dlq := awstest.Queues(t, cfg, queue.QueueSpec{Name: awstest.Name("chaos-replay")})
	l, _ := ledger.New(db, ledger.Options{Table: table})
	old, _ := ledger.New(db, ledger.Options{Table: table, Now: func() time.Time { return time.Now().Add(-48 * time.Hour) }})
	f := &replayFixture{l: l, old: old, sq: sqs.NewFromConfig(cfg), qurl: qurl, dlq: dlq, out: &bytes.Buffer{}, err: &bytes.Buffer{}}
	f.r = &replayer{ledger: l, sqs: f.sq, queueURL: qurl, now: time.Now, stdout: f.out, stderr: f.err}
	return f
}

// event stores an event with its payload and drives it to status.
func (f *replayFixture) event(t *testing.T, l *ledger.Ledger, key string, status ledger.Status) ledger.Key {
	t.Helper()
	ctx := t.Context()
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: key}
	if _, _, err := l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "sha-" + key}); err != nil {
		t.Fatal(err)
	}
	if err := l.PutPayload(ctx, id, []byte(`{"id":"`+key+`"}`), "sha-"+key); err != nil {
		t.Fatal(err)
	}
	if status == ledger.Received {
		return id
	}
	rec, err := l.Claim(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	switch status {
	case ledger.Dead:
		_, err = l.Bury(ctx, rec, "charge: payments API refused with 402")
	case ledger.Failed:
		_, err = l.Fail(ctx, rec, "charge: payments API answered 503", time.Hour)
	case ledger.Done:
		_, err = l.Complete(ctx, rec)
	}
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (f *replayFixture) status(t *testing.T, id ledger.Key) ledger.Status {
	t.Helper()
	rec, err := f.l.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Status
}

// drain returns the messages on url.
func (f *replayFixture) drain(t *testing.T, url string) []queue.Message {
	t.Helper()
	var out []queue.Message
	for _, b := range awstest.Drain(t, f.sq, url) {
		msg, err := queue.Decode(b)
		if err != nil {
			t.Fatalf("malformed message %q: %v", b, err)
		}
		out = append(out, msg)
	}
	return out
}

func TestReplay(t *testing.T) {
	t.Parallel()
	f := replaySetup(t)
	ctx := t.Context()
	deadNew := f.event(t, f.l, "evt_dead_new", ledger.Dead)
	deadOld := f.event(t, f.old, "evt_dead_old", ledger.Dead)
	failed := f.event(t, f.l, "evt_failed", ledger.Failed)
	done := f.event(t, f.l, "evt_done", ledger.Done)

	// A dry run changes nothing.
	if code := f.r.run(ctx, replayOptions{status: ledger.Dead, dry: true}); code != 0 {
		t.Fatalf("dry run exit %d: %s", code, f.err)
	}
	if !strings.Contains(f.out.String(), "would replay stripe/acme/evt_dead_old") || !strings.Contains(f.out.String(), "payments API refused with 402") {
		t.Errorf("dry run output does not list the dead events with their last error:\n%s", f.out)
	}
	if f.status(t, deadNew) != ledger.Dead || f.status(t, deadOld) != ledger.Dead || len(f.drain(t, f.qurl)) != 0 {
		t.Fatal("dry run changed the ledger or the queue")
	}

	// By time range: only the dead event received in the last day.
	if code := f.r.run(ctx, replayOptions{status: ledger.Dead, since: time.Now().Add(-24 * time.Hour)}); code != 0 {
		t.Fatalf("exit %d: %s", code, f.err)
	}
	if f.status(t, deadNew) != ledger.Received || f.status(t, deadOld) != ledger.Dead {
		t.Fatalf("--since 24h: new %s, old %s; want only the new one replayed", f.status(t, deadNew), f.status(t, deadOld))
	}
	msgs := f.drain(t, f.qurl)
	if len(msgs) != 1 || msgs[0].Key() != deadNew || string(msgs[0].Body) != `{"id":"evt_dead_new"}` || msgs[0].SHA256 != "sha-evt_dead_new" || msgs[0].Type != "invoice.paid" {
		t.Fatalf("queue after --since: %+v; want one message with the stored payload", msgs)
	}
	rec, _ := f.l.Get(ctx, deadNew)
	if rec.Attempts != 0 || rec.DueAt.IsZero() {
		t.Errorf("replayed record %+v: want attempts reset and a due time (the reclaimer's safety net)", rec)
	}

	// By key, and by --until.
	if code := f.r.run(ctx, replayOptions{source: "stripe", tenant: "acme", id: deadOld.ID}); code != 0 {
		t.Fatalf("--key exit %d: %s", code, f.err)
	}
	if st := f.status(t, deadOld); st != ledger.Received {
		t.Fatalf("--key left the old dead event %s", st)
	}
	if msgs := f.drain(t, f.qurl); len(msgs) != 1 || msgs[0].Key() != deadOld {
		t.Fatalf("--key queued %+v; want the old dead event once", msgs)
	}

	// Failed events by status.
	if code := f.r.run(ctx, replayOptions{status: ledger.Failed, until: time.Now().Add(time.Minute)}); code != 0 {
		t.Fatalf("--status failed exit %d: %s", code, f.err)
	}
	if f.status(t, failed) != ledger.Received {
		t.Fatal("--status failed did not replay the failed event")
	}
	f.drain(t, f.qurl)

	// Refusals: a done event, a replayed (received) one, an unknown one.
	for _, key := range []string{done.ID, deadNew.ID, "evt_nobody"} {
		f.err.Reset()
		if code := f.r.run(ctx, replayOptions{source: "stripe", tenant: "acme", id: key}); code != 1 {
			t.Errorf("--key %s: exit %d, want 1", key, code)
		}
		if f.err.Len() == 0 {
			t.Errorf("--key %s: no explanation on stderr", key)
		}
	}
	if f.status(t, done) != ledger.Done || len(f.drain(t, f.qurl)) != 0 {
		t.Fatal("a refused replay changed the ledger or the queue")
	}
}

// TestReplayResolvesIndeterminateSteps: an event dead as "indeterminate
// step NAME" is replayed only with that step resolved; bulk replays skip it
// and say how to resolve it.
func TestReplayResolvesIndeterminateSteps(t *testing.T) {
	t.Parallel()
	f := replaySetup(t)
	ctx := t.Context()
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_indet"}
	f.l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "x"})
	f.l.PutPayload(ctx, id, []byte(`{"id":"evt_indet"}`), "x")
	lease, err := f.l.Claim(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Bury(ctx, lease, "indeterminate step notify: it was started by an earlier attempt and has no check",
		ledger.StepChange{Name: "charge", Status: ledger.StepDone, Result: "ch_1"}, ledger.StepChange{Name: "notify", Status: ledger.StepStarted}); err != nil {
		t.Fatal(err)
	}
	for _, o := range []replayOptions{
		{status: ledger.Dead},
		{source: "stripe", tenant: "acme", id: id.ID},
		{source: "stripe", tenant: "acme", id: id.ID, step: "charge", rerun: true},
	} {
		f.err.Reset()
		if code := f.r.run(ctx, o); code != 1 || !strings.Contains(f.err.String(), "--step notify") {
			t.Errorf("%+v: exit %d, stderr %q; want 1 and how to resolve step notify", o, code, f.err)
		}
	}
	if f.status(t, id) != ledger.Dead || len(f.drain(t, f.qurl)) != 0 {
		t.Fatal("an unresolved indeterminate event was replayed")
	}
	if code := f.r.run(ctx, replayOptions{source: "stripe", tenant: "acme", id: id.ID, step: "notify", markDone: true, result: "ntf_7"}); code != 0 {
		t.Fatalf("--mark-done: exit %d: %s", code, f.err)
	}
	rec, _ := f.l.Get(ctx, id)
	if rec.Status != ledger.Received || rec.Steps["notify"].Status != ledger.StepDone || rec.Steps["notify"].Result != "ntf_7" || rec.Steps["charge"].Result != "ch_1" {
		t.Fatalf("after --mark-done: %+v", rec)
	}
	if len(f.drain(t, f.qurl)) != 1 {
		t.Fatal("the resolved event was not enqueued")
	}
}

func TestReplayRedrivesDLQ(t *testing.T) {
	t.Parallel()
	f := replaySetup(t)
	ctx := t.Context()
	for _, key := range []string{"evt_dlq_1", "evt_dlq_2", "evt_dlq_3"} {
		f.event(t, f.l, key, ledger.Failed)
		snd := &queue.Sender{API: f.sq, URL: f.dlq}
		if err := snd.Send(ctx, queue.Message{Source: "stripe", Tenant: "acme", ID: key, Type: "invoice.paid", SHA256: "sha-" + key, Body: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &f.dlq, MessageBody: aws.String("not a message")}); err != nil {
		t.Fatal(err)
	}
	// A dry run judges every message and moves none; it says it would
	// leave the unreadable one (exit 1: something needs a look). A send
	// whose answer the emulator cut short is retried by the SDK and can
	// queue a message twice (SQS is at-least-once too), so the test counts
	// the events, not the messages.
	code := f.r.run(ctx, replayOptions{dlq: f.dlq, dry: true})
	would := map[string]bool{}
	for _, k := range []string{"evt_dlq_1", "evt_dlq_2", "evt_dlq_3"} {
		would[k] = strings.Contains(f.out.String(), "would be redriven stripe/acme/"+k+"\n")
	}
	if code != 1 || !would["evt_dlq_1"] || !would["evt_dlq_2"] || !would["evt_dlq_3"] || strings.Count(f.out.String(), "would be redriven") < 3 ||
		!strings.Contains(f.out.String(), "skipped 1 (1 unreadable)") {
		t.Fatalf("dry run exit %d: %s %s", code, f.out, f.err)
	}
	if n := len(f.drain(t, f.qurl)); n != 0 {
		t.Fatalf("a dry run moved %d messages", n)
	}
	f.out.Reset()
	code = f.r.run(ctx, replayOptions{dlq: f.dlq})
	if code != 1 || !strings.Contains(f.out.String(), "skipped message ") || !strings.Contains(f.out.String(), "unreadable") {
		t.Errorf("exit %d, stdout %q; want 1 and the undecodable message reported", code, f.out)
	}
	msgs := f.drain(t, f.qurl)
	keys := map[string]bool{}
	for _, m := range msgs {
		keys[m.ID] = true
	}
	if len(keys) != 3 || !keys["evt_dlq_1"] || !keys["evt_dlq_2"] || !keys["evt_dlq_3"] {
		t.Fatalf("main queue after redrive: %+v; want the three decodable messages", msgs)
	}
}

func TestReplayFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "say what to replay"},
		{[]string{"--id", "evt_1"}, "needs --source and --tenant"},
		{[]string{"--key", "evt_1"}, "--key is deprecated and will go in 1.0; use --id"}, // the old flag still sets the id
		{[]string{"--key", "evt_1"}, "--id needs --source and --tenant"},
		{[]string{"--status", "done"}, "only dead or failed"},
		{[]string{"--status", "dead", "--dlq", "http://x"}, "say what to replay"},
		{[]string{"--dlq", "http://x", "--source", "stripe"}, "takes no --source"},
		{[]string{"--status", "dead", "--drop-skipped"}, "--drop-skipped goes with --dlq"},
		{[]string{"--dlq", "http://x", "--apply-stale"}, "--apply-stale replays events from the ledger"},
		{[]string{"--since", "yesterday"}, "RFC 3339"},
		{[]string{"--since", "1h", "--until", "2h"}, "--since must be before --until"},
		{[]string{"evt_1"}, "give the event id with --id"},
		{[]string{"--status", "dead", "--step", "notify", "--rerun"}, "give the event with --id"},
		{[]string{"--id", "k", "--source", "s", "--tenant", "t", "--step", "notify"}, "exactly one of --mark-done"},
		{[]string{"--id", "k", "--source", "s", "--tenant", "t", "--step", "notify", "--rerun", "--mark-done"}, "exactly one of --mark-done"},
		{[]string{"--id", "k", "--source", "s", "--tenant", "t", "--mark-done"}, "need --step NAME"},
		{[]string{"--id", "k", "--source", "s", "--tenant", "t", "--step", "notify", "--rerun", "--result", "x"}, "--result goes with --mark-done"},
		{[]string{"--id", "k", "--source", "s", "--tenant", "t", "--step", "no tify", "--rerun"}, "is not a step name"},
	} {
		var out, errb bytes.Buffer
		if code := runReplay(t.Context(), tc.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("replay %v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
	var out, errb bytes.Buffer
	if code := runReplay(t.Context(), []string{"--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "--dry-run") {
		t.Errorf("--help: exit %d, %q", code, out.String())
	}
}

// --apply-stale marks the replay for InOrder routes; a plain one does not.
func TestReplayApplyStale(t *testing.T) {
	t.Parallel()
	f := replaySetup(t)
	ctx := t.Context()
	forced := f.event(t, f.l, "evt_forced", ledger.Dead)
	plain := f.event(t, f.l, "evt_plain", ledger.Dead)
	if code := f.r.run(ctx, replayOptions{source: "stripe", tenant: "acme", id: forced.ID, applyStale: true}); code != 0 {
		t.Fatalf("exit %d: %s", code, f.err)
	}
	if code := f.r.run(ctx, replayOptions{source: "stripe", tenant: "acme", id: plain.ID}); code != 0 {
		t.Fatalf("exit %d: %s", code, f.err)
	}
	if !strings.Contains(f.out.String(), "evt_forced (was dead after 1 attempt, 0 reclaims; last error: charge: payments API refused with 402); applied even if stale") {
		t.Errorf("output:\n%s", f.out)
	}
	a, _ := f.l.Get(ctx, forced)
	b, _ := f.l.Get(ctx, plain)
	if a.Status != ledger.Received || !a.AppliesStale() || b.Status != ledger.Received || b.AppliesStale() {
		t.Fatalf("forced %+v; plain %+v", a, b)
	}
	if n := len(f.drain(t, f.qurl)); n != 2 {
		t.Fatalf("%d messages, want 2", n)
	}
}

// TestPlural: replay printed "1 attempts".
func TestPlural(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0 attempts", 1: "1 attempt", 2: "2 attempts"} {
		if got := plural(n, "attempt"); got != want {
			t.Errorf("plural(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestWritingCommandsRefuseANewerFormat: replay and order reset read the
// table's record format first, and write nothing to a table a later
// release raised past what this hookledger knows.
func TestWritingCommandsRefuseANewerFormat(t *testing.T) {
	f := replaySetup(t)
	id := f.event(t, f.l, "evt_newer_table", ledger.Dead)
	t.Setenv("AWS_ENDPOINT_URL", awstest.Endpoint(t))
	t.Setenv("HOOKLEDGER_TABLE", f.l.Table())
	t.Setenv("HOOKLEDGER_QUEUE_URL", f.qurl)
	t.Setenv("HOOKLEDGER_PAYLOAD_BUCKET", "")
	db := dynamodb.NewFromConfig(awstest.Config(t))
	if _, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(f.l.Table()), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "ledger#meta"}, "sk": &types.AttributeValueMemberS{Value: "format"},
		"format": &types.AttributeValueMemberN{Value: "99"}, "release": &types.AttributeValueMemberS{Value: "7.0.0"},
	}}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"replay", "--source", "stripe", "--tenant", "acme", "--id", id.ID},
		{"order", "reset", "--source", "stripe", "--tenant", "acme", "--yes", "sub_1"},
	} {
		var errb bytes.Buffer
		code := run(t.Context(), args, &bytes.Buffer{}, &errb)
		if code != 1 || !strings.Contains(errb.String(), "record format 99, written by hookledger 7.0.0") || !strings.Contains(errb.String(), "Deploy hookledger v7.0.0 or later") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
	if got := f.status(t, id); got != ledger.Dead {
		t.Errorf("the refused replay left the record %s", got)
	}
	if msgs := f.drain(t, f.qurl); len(msgs) != 0 {
		t.Errorf("the refused replay enqueued %d messages", len(msgs))
	}
}
