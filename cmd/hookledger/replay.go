package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/internal/sdkconfig"
	"github.com/hookledger/hookledger/ledger"
)

const replayHelp = `Replays dead (or failed) events: each record goes back to received
(attempts and reclaims reset) and its stored payload is enqueued again.
With --dlq, moves a dead-letter queue's messages back into the processing
queue, except those the ledger cannot use, which stay, listed with the
reason: unreadable, past the ledger's retention, or not the event their
record holds (an earlier event's under a key used again, or another type).
Review them, then delete them with --drop-skipped.

Replaying is safe to repeat: effects carry the same downstream idempotency
keys as before, and steps recorded done do not run again.

An event dead as "indeterminate step NAME" (an at-most-once step started,
and nobody could prove whether it happened) is replayed only once you check
that step downstream: --mark-done (it happened; --result gives what later
steps read back) or --rerun (it did not). Bulk replays (--status) skip and
list such events.

An InOrder route judges a replayed event again: if a newer event of its
resource was applied meanwhile, it is stale (SkipStale marks it done
unrun). --apply-stale runs it anyway and makes its position the resource's
newest: use it only for the event whose state you want the resource to have.

Reads HOOKLEDGER_TABLE, HOOKLEDGER_QUEUE_URL and, for the S3 payload store,
HOOKLEDGER_PAYLOAD_BUCKET (the stack output PayloadBucketName). An event
with no stored payload (under HOOKLEDGER_PAYLOAD=on-trouble, one done on its
first delivery) cannot be replayed from the ledger.

  hookledger replay --source stripe --tenant acme --id evt_123
  hookledger replay --source stripe --tenant acme --id evt_123 --step notify --mark-done --result ntf_42
  hookledger replay --source stripe --tenant acme --id evt_123 --step notify --rerun
  hookledger replay --source stripe --tenant acme --id evt_123 --apply-stale
  hookledger replay --status dead --since 2h
  hookledger replay --status failed --source stripe --dry-run
  hookledger replay --dlq https://sqs.../hookledger-dlq
  hookledger replay --dlq https://sqs.../hookledger-dlq --drop-skipped
`

// replayOptions are the parsed flags.
type replayOptions struct {
	source, tenant, id string
	status             ledger.Status
	since, until       time.Time
	dlq                string
	dropSkipped        bool // with --dlq: delete the messages it skips
	dry                bool
	limit              int
	step               string // with --mark-done or --rerun
	markDone, rerun    bool
	result             string
	applyStale         bool // apply InOrder events even if stale
}

// replayLedger is the slice of the ledger replay calls.
type replayLedger interface {
	Get(ctx context.Context, id ledger.Key) (ledger.Record, error)
	Find(ctx context.Context, q ledger.Query) (ledger.Page, error)
	PayloadOf(ctx context.Context, rec ledger.Record) ([]byte, error)
	Replay(ctx context.Context, id ledger.Key, changes ...ledger.StepChange) (ledger.Record, error)
	ReplayApplyStale(ctx context.Context, id ledger.Key, changes ...ledger.StepChange) (ledger.Record, error)
	Table() string
}

// redriveAPI is the slice of SQS a DLQ redrive calls.
type redriveAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var (
	_ replayLedger = (*ledger.Ledger)(nil)
	_ redriveAPI   = (*sqs.Client)(nil)
)

// replayer carries out a replay.
type replayer struct {
	ledger   replayLedger
	sqs      redriveAPI
	queueURL string
	store    *blob.Store // the S3 payload store (nil: none configured)
	now      func() time.Time
	stdout   io.Writer
	stderr   io.Writer
}

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hookledger", "replay", "replay (--id ID --source S --tenant T | --status dead|failed [--source S] [--tenant T] [--since T] [--until T] | --dlq URL [--drop-skipped]) [--dry-run] [--limit N]", stderr)
	var o replayOptions
	fs.StringVar(&o.id, "id", "", "replay this one event (the provider's event id); needs --source and --tenant")
	fs.Func("key", "deprecated: --id", func(v string) error {
		fmt.Fprintln(stderr, "replay: --key is deprecated and will go in 1.0; use --id (the provider's event id)")
		o.id = v
		return nil
	})
	fs.StringVar(&o.source, "source", "", "the event's source; with --status, only events of this source")
	fs.StringVar(&o.tenant, "tenant", "", "the event's tenant; with --status, only events of this tenant")
	status := fs.String("status", "", "replay every event in this status: dead or failed (default dead when --since or --until is given)")
	since := fs.String("since", "", "only events received at or after this time: RFC 3339 (2026-01-02T15:04:05Z) or a duration ago (90m, 24h)")
	until := fs.String("until", "", "only events received before this time (same forms as --since)")
	fs.StringVar(&o.dlq, "dlq", "", "move the messages of this dead-letter queue (its URL) back into HOOKLEDGER_QUEUE_URL, skipping (and listing) those the ledger cannot use")
	fs.BoolVar(&o.dropSkipped, "drop-skipped", false, "with --dlq: delete the messages it skips from the dead-letter queue (review them first, without this flag)")
	fs.BoolVar(&o.dry, "dry-run", false, "print what would be replayed or redriven; change nothing")
	fs.IntVar(&o.limit, "limit", 0, "at most this many events or messages (0: all)")
	fs.StringVar(&o.step, "step", "", "with --id: resolve this step before replaying (with --mark-done or --rerun)")
	fs.BoolVar(&o.markDone, "mark-done", false, "with --step: record the step done (you checked that its effect happened); it will not run again")
	fs.BoolVar(&o.rerun, "rerun", false, "with --step: clear the step (you checked that its effect did not happen); it runs again")
	fs.StringVar(&o.result, "result", "", "with --mark-done: the step's result that later steps read back (an id)")
	fs.BoolVar(&o.applyStale, "apply-stale", false, "run the events even if a newer event of their resource was applied (InOrder routes), and make their positions their resources' newest")
	synopsis := fs.Usage
	fs.Usage = func() {
		synopsis()
		fmt.Fprint(fs.Output(), "\n"+replayHelp)
	}
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "replay: unexpected argument %q; give the event id with --id\n", fs.Arg(0))
		return 2
	}
	now := time.Now()
	var err error
	if o.since, err = cli.ParseWhen(*since, now); err == nil {
		o.until, err = cli.ParseWhen(*until, now)
	}
	if err != nil {
		return cli.Fail(stderr, "replay", 2, err)
	}
	o.status = ledger.Status(*status)
	if o.status == "" && (!o.since.IsZero() || !o.until.IsZero()) {
		o.status = ledger.Dead
	}
	if err := o.validate(); err != nil {
		return cli.Fail(stderr, "replay", 2, err)
	}
	c, err := config.Load(os.Getenv)
	if err == nil && c.QueueURL == "" {
		err = errors.New("HOOKLEDGER_QUEUE_URL is empty: set it to the processing queue's URL (hookledger setup prints it)")
	}
	if err != nil {
		return cli.Fail(stderr, "replay", 2, err)
	}
	cfg, err := sdkconfig.Load(ctx, os.Getenv)
	if err != nil {
		return cli.Fail(stderr, "replay", 1, err)
	}
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), c.LedgerOptions())
	if err != nil {
		return cli.Fail(stderr, "replay", 2, err)
	}
	if !useFormat(ctx, l, stderr, "replay") {
		return 1
	}
	r := &replayer{ledger: l, sqs: sqs.NewFromConfig(cfg), queueURL: c.QueueURL, store: payloadStore(c, cfg), now: time.Now, stdout: stdout, stderr: stderr}
	return r.run(ctx, o)
}

func (o replayOptions) validate() error {
	modes := 0
	for _, set := range []bool{o.id != "", o.status != "", o.dlq != ""} {
		if set {
			modes++
		}
	}
	switch {
	case modes != 1:
		return errors.New("say what to replay: one of --id (with --source and --tenant), --status dead|failed, or --dlq URL")
	case o.id != "" && (o.source == "" || o.tenant == ""):
		return errors.New("--id needs --source and --tenant: an event is known by (source, tenant, id)")
	case o.status != "" && o.status != ledger.Dead && o.status != ledger.Failed:
		return fmt.Errorf("--status %q: only dead or failed events can be replayed (done ones already took effect; received and processing ones are still in flight)", o.status)
	case o.dlq != "" && (o.source != "" || o.tenant != "" || !o.since.IsZero() || !o.until.IsZero()):
		return errors.New("--dlq redrives a whole dead-letter queue; it takes no --source, --tenant, --since or --until")
	case o.dropSkipped && o.dlq == "":
		return errors.New("--drop-skipped goes with --dlq URL")
	case o.applyStale && o.dlq != "":
		return errors.New("--apply-stale replays events from the ledger (--id or --status); a --dlq redrive moves messages as they are")
	case !o.since.IsZero() && !o.until.IsZero() && !o.since.Before(o.until):
		return errors.New("--since must be before --until")
	case o.limit < 0:
		return errors.New("--limit must not be negative")
	case o.step != "" && o.id == "":
		return errors.New("--step resolves one event's step: give the event with --id, --source and --tenant")
	case o.step != "" && o.markDone == o.rerun:
		return errors.New("--step needs exactly one of --mark-done (its effect happened) or --rerun (it did not)")
	case o.step == "" && (o.markDone || o.rerun || o.result != ""):
		return errors.New("--mark-done, --rerun and --result need --step NAME")
	case o.result != "" && !o.markDone:
		return errors.New("--result goes with --mark-done")
	case o.step != "" && !ledger.ValidStepName(o.step):
		return fmt.Errorf("--step %q is not a step name (letters, digits, '_', '.', '-')", o.step)
	case len(o.result) > ledger.MaxStepResult:
		return fmt.Errorf("--result is %d bytes, over %d", len(o.result), ledger.MaxStepResult)
	}
	return nil
}

// run replays what o selects; it returns 1 unless all of it was (or would be) replayed.
func (r *replayer) run(ctx context.Context, o replayOptions) int {
	if o.dlq != "" {
		return r.redrive(ctx, o)
	}
	var recs []ledger.Record
	if o.id != "" {
		rec, err := r.ledger.Get(ctx, ledger.Key{Source: o.source, Tenant: o.tenant, ID: o.id})
		if errors.Is(err, ledger.ErrNotFound) {
			fmt.Fprintf(r.stderr, "replay: no record for %s/%s/%s in table %s (check --source and --tenant)\n", o.source, o.tenant, o.id, r.ledger.Table())
			return 1
		}
		if err != nil {
			fmt.Fprintf(r.stderr, "replay: %v\n%s", err, awsHint(err, os.Getenv))
			return 1
		}
		if rec.Status != ledger.Dead && rec.Status != ledger.Failed {
			fmt.Fprintf(r.stderr, "replay: %s is %s; only dead or failed events are replayed\n", rec.Key, rec.Status)
			return 1
		}
		recs = []ledger.Record{rec}
	} else {
		q := ledger.Query{Status: o.status, Source: o.source, Tenant: o.tenant, Since: o.since, Until: o.until, Limit: ledger.MaxFindLimit}
		for {
			page, err := r.ledger.Find(ctx, q)
			if err != nil {
				fmt.Fprintf(r.stderr, "replay: %v\n%s", err, awsHint(err, os.Getenv))
				return 1
			}
			recs = append(recs, page.Records...)
			if q.After = page.Next; q.After == "" {
				break
			}
		}
		sort.Slice(recs, func(i, j int) bool { return recs[i].CreatedAt.Before(recs[j].CreatedAt) })
	}
	if o.limit > 0 && len(recs) > o.limit {
		recs = recs[:o.limit]
	}
	failed := 0
	for _, rec := range recs {
		if err := r.one(ctx, rec, o); err != nil {
			failed++
			fmt.Fprintf(r.stderr, "replay: %v\n", err)
		}
	}
	verb := "replayed"
	if o.dry {
		verb = "would replay"
	}
	fmt.Fprintf(r.stdout, "%s %d of %d selected events (table %s)\n", verb, len(recs)-failed, len(recs), r.ledger.Table())
	if failed > 0 {
		return 1
	}
	return 0
}

// one replays a record: payload (none, no replay), ledger, then message.
func (r *replayer) one(ctx context.Context, rec ledger.Record, o replayOptions) error {
	dry := o.dry
	var changes []ledger.StepChange
	switch {
	case o.step != "" && o.markDone:
		changes = []ledger.StepChange{{Name: o.step, Status: ledger.StepDone, Result: o.result}}
	case o.step != "" && o.rerun:
		changes = []ledger.StepChange{{Name: o.step}}
	}
	if step, ok := indeterminateStep(rec); ok && (o.step != step || len(changes) == 0) {
		return fmt.Errorf("%s: dead as indeterminate step %s (%s); check downstream whether it happened, then replay it with --id %s --step %s and --mark-done or --rerun",
			rec.Key, step, rec.LastError, rec.ID, step)
	}
	body, err := blob.Body(ctx, r.ledger, r.store, rec)
	if errors.Is(err, blob.ErrMissing) {
		return fmt.Errorf("%s: no stored payload, so it cannot be replayed; ask the sender to redeliver it (or, if its message is in the dead-letter queue, redrive that with --dlq: the processor keeps the body of a dead event it finds there, and this replay then works)", rec.Key)
	}
	if err != nil {
		return fmt.Errorf("%s: read payload: %w", rec.Key, err)
	}
	line := fmt.Sprintf("%s (was %s after %s, %s", rec.Key, rec.Status, plural(rec.Attempts, "attempt"), plural(rec.Reclaims, "reclaim"))
	if rec.LastError != "" {
		line += "; last error: " + rec.LastError
	}
	line += ")"
	for name, st := range rec.Steps {
		if st.Status == ledger.StepStarted && name != o.step {
			line += fmt.Sprintf("; step %s was started and not recorded done: its check decides on the retry", name)
		}
	}
	if o.applyStale {
		line += "; applied even if stale"
	}
	if len(changes) > 0 {
		if o.markDone {
			line += fmt.Sprintf("; step %s marked done", o.step)
		} else {
			line += fmt.Sprintf("; step %s cleared to run again", o.step)
		}
	}
	if dry {
		fmt.Fprintf(r.stdout, "would replay %s\n", line)
		return nil
	}
	replay := r.ledger.Replay
	if o.applyStale {
		replay = r.ledger.ReplayApplyStale
	}
	if _, err := replay(ctx, rec.Key, changes...); err != nil {
		var se *ledger.StateError
		if errors.As(err, &se) {
			return fmt.Errorf("%s: not replayed, it is now %s (someone else moved it)", rec.Key, se.Record.Status)
		}
		return fmt.Errorf("%s: %w", rec.Key, err)
	}
	msg := queue.Message{Source: rec.Source, Tenant: rec.Tenant, ID: rec.ID, Type: rec.EventType, SHA256: rec.BodySHA256,
		Body: body, ReceivedAt: rec.CreatedAt.UnixMilli(), Ref: rec.PayloadRef, Trace: rec.Trace}
	snd := &queue.Sender{API: r.sqs, URL: r.queueURL}
	if err := snd.Send(ctx, msg); err != nil {
		return fmt.Errorf("%s: back to received in the ledger, but the enqueue failed (%v); the reclaimer will re-drive it once it is due (HOOKLEDGER_RECLAIM_AFTER), or run replay again later", rec.Key, err)
	}
	fmt.Fprintf(r.stdout, "replayed %s\n", line)
	return nil
}

// indeterminateStep reports the step that made rec dead as indeterminate.
func indeterminateStep(rec ledger.Record) (string, bool) {
	rest, ok := strings.CutPrefix(rec.LastError, "indeterminate step ")
	if !ok || rec.Status != ledger.Dead {
		return "", false
	}
	name, _, _ := strings.Cut(rest, ":")
	return name, name != ""
}

// redrive moves the DLQ's messages to the processing queue: receive, judge
// (reclaimer.JudgeDeadLetter), send, delete. A message the filter leaves
// stays, listed with why (--drop-skipped deletes it). A failed delete after
// the send means a second processing, which the ledger absorbs. Messages
// left are made visible again at the end, for the reclaimer and the next run.
func (r *replayer) redrive(ctx context.Context, o replayOptions) int {
	if code := r.sameQueue(ctx, o.dlq); code >= 0 {
		return code
	}
	var t redriveTally
	t.skipped = map[string]int{}
	seen := map[string]bool{} // message ids: a receive that comes round again ends the run
	var held []*string        // receipt handles of the messages left in the DLQ
	defer func() {
		for _, h := range held {
			r.sqs.ChangeMessageVisibility(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityInput{QueueUrl: &o.dlq, ReceiptHandle: h, VisibilityTimeout: 0})
		}
	}()
	looked := 0
receive:
	for o.limit == 0 || looked < o.limit {
		n := int32(10)
		if o.limit > 0 {
			n = int32(min(10, o.limit-looked))
		}
		out, err := r.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &o.dlq, MaxNumberOfMessages: n, WaitTimeSeconds: 1, VisibilityTimeout: 60,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAWSTraceHeader}})
		if err != nil {
			fmt.Fprintf(r.stderr, "replay: receive from %s: %v\n", o.dlq, err)
			t.failed++
			break
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			if seen[aws.ToString(m.MessageId)] {
				break receive
			}
			seen[aws.ToString(m.MessageId)] = true
			looked++
			if !r.redriveOne(ctx, o, m, &t) {
				held = append(held, m.ReceiptHandle)
			}
		}
	}
	return r.redriveSummary(o, t)
}

// redriveTally counts what a redrive did.
type redriveTally struct {
	moved, failed, dead, dropped int
	skipped                      map[string]int // by reason
}

// redriveOne judges one DLQ message, moves, drops or leaves it, and says whether it left.
func (r *replayer) redriveOne(ctx context.Context, o replayOptions, m sqstypes.Message, t *redriveTally) (gone bool) {
	would := ""
	if o.dry {
		would = "would be "
	}
	dl, err := reclaimer.JudgeDeadLetter(ctx, r.ledger, aws.ToString(m.Body))
	name := "message " + aws.ToString(m.MessageId)
	if dl.Left != reclaimer.LeftUnreadable {
		name = dl.Message.Key().String()
	}
	if err != nil {
		t.failed++
		fmt.Fprintf(r.stderr, "replay: %s: the ledger could not be read (%v); it stays in the DLQ\n%s", name, err, awsHint(err, os.Getenv))
		return false
	}
	if dl.Left != "" {
		t.skipped[dl.Left]++
		if !o.dropSkipped {
			fmt.Fprintf(r.stdout, "skipped %s: %s; it stays in the DLQ (--drop-skipped deletes it)\n", name, dl.Detail)
			return false
		}
		if !o.dry {
			if _, err := r.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &o.dlq, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.failed++
				fmt.Fprintf(r.stderr, "replay: %s: not deleted from the DLQ: %v\n", name, err)
				return false
			}
		}
		t.dropped++
		fmt.Fprintf(r.stdout, "%sdropped %s: %s\n", would, name, dl.Detail)
		return !o.dry
	}
	if !o.dry {
		// The record's trace, else the one the message came with.
		in := &sqs.SendMessageInput{QueueUrl: &r.queueURL, MessageBody: m.Body,
			MessageSystemAttributes: queue.TraceAttributes(cmp.Or(dl.Record.Trace, m.Attributes[queue.TraceAttribute]))}
		if _, err := r.sqs.SendMessage(ctx, in); err != nil {
			t.failed++
			fmt.Fprintf(r.stderr, "replay: %s: send to %s: %v (it stays in the DLQ)\n", name, r.queueURL, err)
			return false
		}
		if _, err := r.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &o.dlq, ReceiptHandle: m.ReceiptHandle}); err != nil {
			fmt.Fprintf(r.stderr, "replay: %s: sent, but not deleted from the DLQ (%v); it may be processed twice, which the ledger absorbs\n", name, err)
		}
	}
	t.moved++
	// The processor acks a dead event's message unrun, keeping its body if
	// the ledger has none: such events need a replay afterwards.
	if dl.Record.Status == ledger.Dead {
		t.dead++
		fmt.Fprintf(r.stdout, "%sredriven %s (dead: once the processor has kept its body, run hookledger replay --source %s --tenant %s --id %s)\n",
			would, name, dl.Message.Source, dl.Message.Tenant, dl.Message.ID)
	} else {
		fmt.Fprintf(r.stdout, "%sredriven %s\n", would, name)
	}
	return !o.dry
}

// redriveSummary prints what a redrive did; 1 if something failed or a skipped message stays.
func (r *replayer) redriveSummary(o replayOptions, t redriveTally) int {
	moved, failed, dead, dropped, skipped := t.moved, t.failed, t.dead, t.dropped, t.skipped
	verb, dropVerb := "redrove", "dropped"
	if o.dry {
		verb, dropVerb = "would redrive", "would drop"
	}
	total := 0
	var reasons []string
	for _, why := range []string{reclaimer.LeftNotThisEvent, reclaimer.LeftGone, reclaimer.LeftUnreadable} {
		if skipped[why] > 0 {
			total += skipped[why]
			reasons = append(reasons, fmt.Sprintf("%d %s", skipped[why], why))
		}
	}
	line := fmt.Sprintf("%s %s from %s to %s; skipped %d", verb, plural(moved, "message"), o.dlq, r.queueURL, total)
	if len(reasons) > 0 {
		line += " (" + strings.Join(reasons, ", ") + ")"
	}
	switch {
	case o.dropSkipped:
		line += fmt.Sprintf(", %s %d of them", dropVerb, dropped)
	case total > 0:
		line += ", left in the DLQ: review them above, then run again with --drop-skipped to delete them"
	}
	fmt.Fprintf(r.stdout, "%s; %d failed\n", line, failed)
	if dead > 0 {
		fmt.Fprintf(r.stdout, "%d of them belong to dead events: the processor keeps their bodies; replay them afterwards (hookledger replay --status dead)\n", dead)
	}
	if failed > 0 || total > dropped {
		return 1
	}
	return 0
}

// sameQueue guards the redrive against cycling a queue into itself. URLs can
// name one queue in many ways (host case, regional and legacy endpoints), so
// it compares the queues' ARNs after the normalised URLs. It returns -1 to
// go on, 2 when --dlq is the processing queue, 1 when an ARN cannot be read.
func (r *replayer) sameQueue(ctx context.Context, dlq string) int {
	if normalQueueURL(dlq) == normalQueueURL(r.queueURL) {
		fmt.Fprintln(r.stderr, "replay: --dlq is HOOKLEDGER_QUEUE_URL itself; give the dead-letter queue's URL (the processing queue's name with -dlq)")
		return 2
	}
	arn := func(url string) (string, error) {
		out, err := r.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url,
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			return "", err
		}
		a := out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
		if a == "" {
			return "", errors.New("no QueueArn in its attributes")
		}
		return a, nil
	}
	dlqARN, err := arn(dlq)
	if err != nil {
		fmt.Fprintf(r.stderr, "replay: read the ARN of --dlq %s: %v (check the URL; the redrive needs sqs:GetQueueAttributes on both queues)\n", dlq, err)
		return 1
	}
	mainARN, err := arn(r.queueURL)
	if err != nil {
		fmt.Fprintf(r.stderr, "replay: read the ARN of HOOKLEDGER_QUEUE_URL %s: %v (the redrive needs sqs:GetQueueAttributes on both queues)\n", r.queueURL, err)
		return 1
	}
	if dlqARN == mainARN {
		fmt.Fprintf(r.stderr, "replay: --dlq %s is HOOKLEDGER_QUEUE_URL itself (both are %s); give the dead-letter queue's URL (the processing queue's name with -dlq)\n", dlq, dlqARN)
		return 2
	}
	return -1
}

// normalQueueURL is u with scheme and host lower-cased and no trailing slash.
func normalQueueURL(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil {
		return u
	}
	p.Scheme, p.Host = strings.ToLower(p.Scheme), strings.ToLower(p.Host)
	p.Path = strings.TrimRight(p.Path, "/")
	p.RawPath = ""
	return p.String()
}

// plural returns n and noun, with an s unless n is 1: "1 attempt", "2 attempts".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
