//go:build upgrade

package upgrade

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/lab/crash"
	"github.com/hookledger/hookledger/lab/paystub"
	"github.com/hookledger/hookledger/ledger"
)

// inflight is the work inFlight left, by case.
type inflight struct {
	phase                       string
	midStep                     *event
	sub                         string
	held, waiting               *event // the subscription's update whose run crashed holding it, and one behind it
	failed, exhausted, declined *event
	noMessage, queued, dlq      []*event
}

// failureFor is how the payments stub refuses each failing kind's charges.
var failureFor = map[kind]paystub.Failure{
	failed:    {Status: http.StatusServiceUnavailable, Times: 2},
	exhausted: {Status: http.StatusServiceUnavailable},
	declined:  {Status: http.StatusBadRequest},
}

// inFlight leaves work in every state under the release deployed now. The
// reclaimer's schedule, and then the processor's event source, are paused,
// so the next release meets these states as they were left; the deploy's
// fix-ups and resume turn them on again.
func (h *harness) inFlight(t *testing.T, phase string) *inflight {
	t.Helper()
	c := &inflight{phase: phase, sub: "sub_" + phase}
	h.s.reclaim(t, false)
	h.crashes(t, c)
	c.failed, c.exhausted, c.declined = h.failing(t, phase, failed), h.failing(t, phase, exhausted), h.failing(t, phase, declined)
	h.waitFor(t, "the failing events to fail", setupWait, func() (bool, string) {
		d, _ := h.record(t, c.declined)
		f, _ := h.record(t, c.failed)
		x, _ := h.record(t, c.exhausted)
		return d.Status == ledger.Dead && f.Status == ledger.Failed && x.Status == ledger.Failed,
			fmt.Sprintf("declined %s, failed %s, exhausted %s", d.Status, f.Status, x.Status)
	})
	h.s.consume(t, false)
	for range 2 {
		c.noMessage = append(c.noMessage, h.newInvoice(phase, noMessage, ""))
		c.queued = append(c.queued, h.newInvoice(phase, queued, ""))
		c.dlq = append(c.dlq, h.newInvoice(phase, dlq, ""))
	}
	for _, e := range slices.Concat(c.noMessage, c.queued, c.dlq) {
		h.mustDeliver(t, e, 1)
	}
	h.moveMessages(t, c)
	return c
}

// failing sends an invoice whose charges the payments stub refuses as
// failureFor says for the kind.
func (h *harness) failing(t *testing.T, phase string, k kind) *event {
	t.Helper()
	e := h.newInvoice(phase, k, "")
	h.stub.Fail(e.Customer, failureFor[k])
	h.mustDeliver(t, e, 1)
	return e
}

// crashes arms crash points on the processor and sends an invoice whose
// run dies right after its notification, before the ledger records it,
// then a subscription update whose run dies holding the subscription, and
// a newer update that finds it held and is given back.
func (h *harness) crashes(t *testing.T, c *inflight) {
	t.Helper()
	spec, mark := heldSpec, filepath.Join(h.marks, c.phase+"-held")
	restore, err := crash.Arm(t.Context(), h.s.lam, h.s.out["PROCESSOR"], spec, mark)
	if err != nil {
		t.Fatal(err)
	}
	c.midStep = h.newInvoice(c.phase, midStep, "")
	h.mustDeliver(t, c.midStep, 1)
	h.waitFor(t, "the crash after the mid-step event's notification", setupWait, func() (bool, string) {
		rec, _ := h.record(t, c.midStep)
		return slices.Contains(crash.Fired(spec, mark), "step.notify.ran") && rec.Status == ledger.Processing &&
			rec.Steps["notify"].Status == ledger.StepStarted, fmt.Sprintf("record %s, steps %v", rec.Status, rec.Steps)
	})
	c.held = h.newUpdate(t, c.phase, c.sub, 1)
	h.waitFor(t, "the crash holding "+c.sub, setupWait, func() (bool, string) {
		o, err := h.s.ledger.GetOrder(t.Context(), "stripe", "acme", c.sub)
		return slices.Contains(crash.Fired(spec, mark), "step.apply.ran") && err == nil && o.Holder == c.held.ID,
			fmt.Sprintf("order %+v (%v)", o, err)
	})
	c.waiting = h.newUpdate(t, c.phase, c.sub, 2)
	h.waitFor(t, c.sub+"'s next update to find it held", setupWait, func() (bool, string) {
		rec, _ := h.record(t, c.waiting)
		return rec.GivenBack > 0, fmt.Sprintf("record %s, given back %d", rec.Status, rec.GivenBack)
	})
	if err := restore(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// moveMessages takes the no-message events' messages off the queue and
// moves the dead-letter events' to the dead-letter queue, as SQS does
// after maxReceiveCount; the queued events' stay. No copy of those bodies
// is left but the DLQ's: the default payload policy (on-trouble) stores
// none for a new event.
func (h *harness) moveMessages(t *testing.T, c *inflight) {
	t.Helper()
	todo := map[string]kind{}
	for _, e := range slices.Concat(c.noMessage, c.dlq) {
		todo[e.ID] = e.Kind
	}
	q, dl := h.s.out["QUEUE_URL"], h.s.out["DLQ_URL"]
	h.waitFor(t, "the messages of the no-message and dead-letter events", setupWait, func() (bool, string) {
		out, err := h.s.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10,
			VisibilityTimeout: 20, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			msg, err := queue.Decode(aws.ToString(m.Body))
			k, mine := todo[msg.ID]
			switch {
			case err != nil || !mine:
				_, err = h.s.sqs.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: &q, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
			case k == dlq:
				if _, err = h.s.sqs.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: &dl, MessageBody: m.Body, MessageAttributes: m.MessageAttributes}); err == nil {
					_, err = h.s.sqs.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: &q, ReceiptHandle: m.ReceiptHandle})
				}
				delete(todo, msg.ID)
			default:
				_, err = h.s.sqs.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: &q, ReceiptHandle: m.ReceiptHandle})
				delete(todo, msg.ID)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		return len(todo) == 0, fmt.Sprintf("not found on the queue: %v", todo)
	})
}

// snapshot checks that every case is in its state before the deploy and
// returns the ledger's counts, with the queues'.
func (h *harness) snapshot(t *testing.T, c *inflight) map[string]int {
	t.Helper()
	want := func(e *event, ok bool, what string) {
		rec, _ := h.record(t, e)
		if !ok {
			t.Fatalf("%s: %s (%s) is not %s before the deploy: record %s, attempts %d, failures %d, steps %v; the case would prove nothing",
				c.phase, e.ID, e.Kind, what, rec.Status, rec.Attempts, rec.Failures, rec.Steps)
		}
	}
	rec := func(e *event) ledger.Record { r, _ := h.record(t, e); return r }
	want(c.midStep, rec(c.midStep).Status == ledger.Processing && rec(c.midStep).Steps["notify"].Status == ledger.StepStarted, "processing with its notify step started")
	o, err := h.s.ledger.GetOrder(t.Context(), "stripe", "acme", c.sub)
	want(c.held, err == nil && o.Holder == c.held.ID && rec(c.held).Status == ledger.Processing, "processing, holding "+c.sub)
	want(c.waiting, !rec(c.waiting).Status.Terminal() && rec(c.waiting).GivenBack > 0, "waiting for "+c.sub)
	for _, e := range []*event{c.failed, c.exhausted} {
		want(e, rec(e).Status == ledger.Failed && rec(e).Failures > 0, "failed with a failure counted")
	}
	want(c.declined, rec(c.declined).Status == ledger.Dead, "dead")
	for _, e := range slices.Concat(c.noMessage, c.queued, c.dlq) {
		want(e, rec(e).Status == ledger.Received, "received")
	}
	for _, e := range slices.Concat(c.noMessage, c.dlq) {
		_, err := h.s.ledger.Payload(t.Context(), key(e))
		want(e, errors.Is(err, ledger.ErrNotFound), fmt.Sprintf("without a body in the ledger (%v)", err))
	}
	counts, err := h.s.ledger.Counts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for st, n := range counts {
		out[string(st)] = n
	}
	for name, url := range map[string]string{"queue": h.s.out["QUEUE_URL"], "dead-letter queue": h.s.out["DLQ_URL"]} {
		if out[name], err = h.s.depth(t.Context(), url); err != nil {
			t.Fatal(err)
		}
	}
	if out["dead-letter queue"] < len(c.dlq) || out["queue"] < len(c.queued) {
		t.Fatalf("%s: %d messages on the queue, %d on the dead-letter queue before the deploy; want at least %d and %d",
			c.phase, out["queue"], out["dead-letter queue"], len(c.queued), len(c.dlq))
	}
	return out
}

// resume lets the new release at the work: a crash armed again, the event
// source and the reclaimer's schedule on, the no-message events delivered
// again (as a sender does when its first delivery got no answer: the
// receiver finds the record received and stores the body, for the
// reclaimer, or enqueues it again), and the held subscription's next
// update and an older one, which is stale.
func (h *harness) resume(t *testing.T, c *inflight, mark string) {
	t.Helper()
	if _, err := crash.Arm(t.Context(), h.s.lam, h.s.out["PROCESSOR"], killSpec, mark); err != nil {
		t.Fatal(err)
	}
	h.s.consume(t, true)
	h.s.reclaim(t, true)
	h.tr.resume.Store(true)
	for _, e := range c.noMessage {
		res := h.deliverOnce(t, e)
		_, err := h.s.ledger.Payload(t.Context(), key(e))
		if res != "duplicate" && res != "duplicate_requeued" || err != nil {
			t.Errorf("%s: the no-message event %s delivered again was answered %q, its body in the ledger: %v; want a duplicate, its body stored", c.phase, e.ID, res, err)
		}
	}
	h.newUpdate(t, c.phase, c.sub, 3)
	h.newUpdate(t, c.phase, c.sub, 0)
}

// deliverOnce delivers e once more and returns the receiver's answer.
func (h *harness) deliverOnce(t *testing.T, e *event) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := h.send.deliver(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// refused checks a release that refuses the table at cold start: the
// refusal names the record format, and no charge or notification was made
// since its deploy began (before).
func (h *harness) refused(t *testing.T, rep *phaseReport, msg string, before paystub.Stats) {
	t.Helper()
	if !strings.Contains(strings.ToLower(msg), "format") {
		t.Fatalf("%s: release %s fails at cold start, but not for the record format: %s", rep.name, rep.to, msg)
	}
	fmt.Printf("upgrade: %s: release %s refuses the table at cold start, as documented: %s\n", rep.name, rep.to, msg)
	if after := h.stub.Stats(); after.Charges != before.Charges || after.Notifications != before.Notifications {
		t.Errorf("%s: charges or notifications were made while the refusing release was deployed: %d -> %d charges, %d -> %d notifications",
			rep.name, before.Charges, after.Charges, before.Notifications, after.Notifications)
	}
}
