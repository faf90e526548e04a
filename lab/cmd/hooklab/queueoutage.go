package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/hookledger/hookledger/internal/engine"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/fakeclock"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/internal/sdkconfig"
	"github.com/hookledger/hookledger/ledger"
)

const queueOutageHelp = `Shows the pipeline recovering from a queue that silently lost every message
for a stretch. Events are received (their records written, their messages
lost), and the reclaimer re-drives them on its schedule into the queue that
drops them. Then the queue works again and the real processor consumes it.
The clock is injected: the reclaimer runs once per simulated minute, as the
template's schedule does, and a three-hour outage takes a minute or two.
It passes when every event is done within two minutes of the queue's return
(one backoff step and one tick), however often it was re-driven before.
Needs an emulator at AWS_ENDPOINT_URL (default http://localhost:4566); make
outage starts one.
`

// The reclaimer's schedule (the template's rate(1 minute)), and the bound
// on recovery this demo checks: one backoff step and one tick.
const (
	outageTick  = time.Minute
	outageBound = 2 * outageTick
)

func runQueueOutage(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hooklab", "queue-outage", "queue-outage [--length 3h] [--events 40]", stderr)
	length := fs.Duration("length", 3*time.Hour, "how long the queue loses messages, by the injected clock (past about an hour, a doubling backoff would reach its cap of an hour)")
	n := fs.Int("events", 40, "events received during the outage, in four groups spread over it")
	synopsis := fs.Usage
	fs.Usage = func() {
		synopsis()
		fmt.Fprint(fs.Output(), "\n"+queueOutageHelp)
	}
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	switch {
	case *length < 4*outageTick:
		fmt.Fprintf(stderr, "queue-outage: --length %v: want at least %v, one reclaimer run per group of events\n", *length, 4*outageTick)
		return 2
	case *n < 4:
		fmt.Fprintf(stderr, "queue-outage: --events %d: want at least 4, one per group\n", *n)
		return 2
	}
	if os.Getenv("AWS_ENDPOINT_URL") == "" {
		os.Setenv("AWS_ENDPOINT_URL", "http://localhost:4566")
	}
	if err := reachable(os.Getenv("AWS_ENDPOINT_URL")); err != nil {
		fmt.Fprintf(stderr, "queue-outage: no AWS emulator answers at %s (%v); run `make outage`, which starts MiniStack\n", os.Getenv("AWS_ENDPOINT_URL"), err)
		return 1
	}
	cfg, err := sdkconfig.Load(ctx, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "queue-outage: %v\n", err)
		return 1
	}
	res, err := queueOutage{length: *length, events: *n}.run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "queue-outage: %v\n", err)
		return 1
	}
	if !res.print(stdout) {
		return 1
	}
	return 0
}

type queueOutage struct {
	length time.Duration
	events int
}

// outageGroup is the events received at one time during the outage.
type outageGroup struct {
	at       time.Duration // after the outage began
	ids      []ledger.Key
	reclaims [2]int        // fewest and most re-drives lost in the outage
	longest  time.Duration // from the queue's return to the last one done
}

type outageResult struct {
	length time.Duration
	groups []*outageGroup
	undone int // events not done when the demo gave up
}

// run creates a table and queue, runs the outage and the recovery by the
// injected clock, and deletes them.
func (q queueOutage) run(ctx context.Context, cfg aws.Config) (outageResult, error) {
	name := "hookledger-qoutage-" + cli.RandomHex(6)
	db, sq := dynamodb.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	if err := ledger.CreateTable(ctx, db, name); err != nil {
		return outageResult{}, err
	}
	url, dlq, err := queue.CreateQueues(ctx, sq, queue.QueueSpec{Name: name, VisibilityTimeout: 30, MaxReceiveCount: 5})
	if err != nil {
		return outageResult{}, err
	}
	defer func() {
		bg := context.Background()
		db.DeleteTable(bg, &dynamodb.DeleteTableInput{TableName: &name})
		sq.DeleteQueue(bg, &sqs.DeleteQueueInput{QueueUrl: &url})
		sq.DeleteQueue(bg, &sqs.DeleteQueueInput{QueueUrl: &dlq})
	}()
	clock := fakeclock.New(time.Now().UTC())
	l, err := ledger.New(db, ledger.Options{Table: name, Now: clock.Now})
	if err != nil {
		return outageResult{}, err
	}
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	rig := &outageRig{clock: clock, l: l, sq: sq, snd: &queue.BatchSender{API: sq, URL: url}}
	rig.rec = &reclaimer.Handler{Ledger: l, Lock: l, Queue: rig.snd, Now: clock.Now, Log: quiet}
	proc := &processor.Handler{Ledger: l, Routes: engine.MustRoutes(hookledger.NewRouter()), Now: clock.Now, Log: quiet}

	res := outageResult{length: q.length}
	if err := q.lose(ctx, rig, &res); err != nil {
		return res, err
	}
	healed := clock.Now()
	for _, g := range res.groups {
		recs, err := l.GetMany(ctx, g.ids)
		if err != nil {
			return res, err
		}
		g.reclaims = [2]int{recs[g.ids[0]].Reclaims, 0}
		for _, r := range recs {
			g.reclaims[0], g.reclaims[1] = min(g.reclaims[0], r.Reclaims), max(g.reclaims[1], r.Reclaims)
		}
	}
	// The queue works again. Give up after an hour and a half: the
	// longest backoff and then some.
	for range 90 {
		if err := rig.tick(ctx, proc); err != nil {
			return res, err
		}
		if res.undone, err = rig.done(ctx, res.groups, healed); err != nil || res.undone == 0 {
			return res, err
		}
	}
	return res, nil
}

// outageRig is the pipeline on the injected clock, and its queue.
type outageRig struct {
	clock *fakeclock.Clock
	l     *ledger.Ledger
	rec   *reclaimer.Handler
	sq    *sqs.Client
	snd   *queue.BatchSender
}

// lose receives the groups of events at their times while the queue drops
// every message, for the outage's length.
func (q queueOutage) lose(ctx context.Context, rig *outageRig, res *outageResult) error {
	start := rig.clock.Now()
	for i := range 4 {
		res.groups = append(res.groups, &outageGroup{at: q.length * time.Duration(i) / 4})
	}
	for made := 0; rig.clock.Now().Sub(start) < q.length; {
		for _, g := range res.groups {
			if g.ids != nil || rig.clock.Now().Sub(start) < g.at {
				continue
			}
			for range q.events / 4 {
				made++
				id := ledger.Key{Source: "stripe", Tenant: "acme", ID: fmt.Sprintf("evt_queue_outage_%04d", made)}
				if err := receive(ctx, rig.l, id); err != nil {
					return err
				}
				g.ids = append(g.ids, id)
			}
		}
		if err := rig.tick(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// tick moves the clock on a minute, runs the reclaimer as the schedule
// would, and empties the queue into proc (nil: nowhere, as the outage).
func (rig *outageRig) tick(ctx context.Context, proc *processor.Handler) error {
	rig.clock.Advance(outageTick)
	rctx, cancel := context.WithTimeout(ctx, time.Minute) // the template's reclaimer timeout
	_, err := rig.rec.Handle(rctx, nil)
	cancel()
	if err != nil {
		return err
	}
	return drainQueue(ctx, rig.sq, rig.snd, proc)
}

// done counts the events not done yet, and notes each group's longest time
// from healed to done.
func (rig *outageRig) done(ctx context.Context, groups []*outageGroup, healed time.Time) (int, error) {
	undone := 0
	for _, g := range groups {
		recs, err := rig.l.GetMany(ctx, g.ids)
		if err != nil {
			return 0, err
		}
		for _, id := range g.ids {
			if r := recs[id]; r.Status != ledger.Done {
				undone++
			} else {
				g.longest = max(g.longest, r.UpdatedAt.Sub(healed))
			}
		}
	}
	return undone, nil
}

// receive writes id's record and body as a receiver does whose enqueue
// was answered and then lost.
func receive(ctx context.Context, l *ledger.Ledger, id ledger.Key) error {
	if _, _, err := l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "x"}); err != nil {
		return err
	}
	return l.PutPayload(ctx, id, []byte(`{"id":"`+id.ID+`"}`), "x")
}

// drainQueue takes every message off the queue, handing each batch to
// proc (nil: the messages are dropped, as the outage loses them), until
// nothing waits or is in flight.
func drainQueue(ctx context.Context, sq *sqs.Client, snd *queue.BatchSender, proc *processor.Handler) error {
	for deadline := time.Now().Add(time.Minute); ; {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &snd.URL, MaxNumberOfMessages: 10, VisibilityTimeout: 5})
		if err != nil {
			return err
		}
		if len(out.Messages) == 0 {
			waiting, inFlight, err := snd.Depth(ctx)
			if err != nil || waiting+inFlight == 0 {
				return err
			}
			if time.Now().After(deadline) {
				return errors.New("the queue did not empty within a minute")
			}
			select { // a message whose receive answer was lost comes back after its 5 s
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		failed := map[string]bool{}
		if proc != nil {
			batch := events.SQSEvent{Records: make([]events.SQSMessage, len(out.Messages))}
			for i, m := range out.Messages {
				batch.Records[i] = events.SQSMessage{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), ReceiptHandle: aws.ToString(m.ReceiptHandle)}
			}
			pctx, cancel := context.WithTimeout(ctx, 30*time.Second) // the template's processor timeout
			resp, _ := proc.Handle(pctx, batch)
			cancel()
			for _, f := range resp.BatchItemFailures {
				failed[f.ItemIdentifier] = true
			}
		}
		var del []sqstypes.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			if !failed[aws.ToString(m.MessageId)] {
				del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
			}
		}
		if len(del) > 0 {
			if _, err := sq.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &snd.URL, Entries: del}); err != nil {
				return err
			}
		}
	}
}

// print writes the result and reports whether it passed.
func (r outageResult) print(w io.Writer) bool {
	fmt.Fprintf(w, "hookledger queue outage demo (injected clock; the reclaimer runs every %v)\n\n", outageTick)
	fmt.Fprintf(w, "the queue lost every message for %v; then it worked again\n\n", r.length)
	fmt.Fprintf(w, "%-12s %6s  %-22s %s\n", "received at", "events", "re-drives lost", "done after the queue returned (longest)")
	longest := time.Duration(0)
	for _, g := range r.groups {
		fmt.Fprintf(w, "%-12s %6d  %-22s %v\n", "+"+g.at.String(), len(g.ids), fmt.Sprintf("%d to %d", g.reclaims[0], g.reclaims[1]), g.longest.Round(time.Second))
		longest = max(longest, g.longest)
	}
	fmt.Fprintln(w)
	if r.undone > 0 || longest > outageBound {
		fmt.Fprintf(w, "FAIL: %d events not done; the longest took %v after the queue returned (want at most %v)\n", r.undone, longest.Round(time.Second), outageBound)
		return false
	}
	fmt.Fprintf(w, "PASS: every event done within %v of the queue's return (bound %v), however often it was re-driven\n", longest.Round(time.Second), outageBound)
	return true
}
