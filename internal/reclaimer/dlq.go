package reclaimer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger/internal/fallback"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/ledger"
)

// DeadLetters takes out of the dead-letter queue the bodies that exist
// nowhere else: under HOOKLEDGER_PAYLOAD=on-trouble (or after a failed
// payload write) a DLQ message may hold the only copy, and a record without
// one cannot be re-driven. Each run reads a few messages and, for each that
// is its record's event, stores the body (EnsurePayload) and deletes the
// message; the record is then re-driven (or replayed, if dead). Messages
// JudgeDeadLetter leaves, or whose body belongs in the payload store, stay
// for `hookledger replay --dlq`. Every message read, and an unreadable DLQ,
// counts as NeedsOperator.
type DeadLetters struct {
	API    dlqAPI
	URL    string
	Ledger deadLetterStore
	Max    int // messages one run reads at most (default DefaultDeadLetters)
}

// DefaultDeadLetters is how many DLQ messages a run reads at most.
const DefaultDeadLetters = 50

// deadLetterVisibility (seconds) hides a message the run left until the next run.
const deadLetterVisibility = 20

type dlqAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// RecordReader reads a record, as JudgeDeadLetter needs.
type RecordReader interface {
	Get(ctx context.Context, id ledger.Key) (ledger.Record, error)
}

type deadLetterStore interface {
	RecordReader
	EnsurePayload(ctx context.Context, id ledger.Key, body []byte, ev ledger.Identity) (bool, error)
	Postpone(ctx context.Context, rec ledger.Record, next time.Time) (ledger.Record, error)
}

var (
	_ dlqAPI          = (*sqs.Client)(nil)
	_ deadLetterStore = (*ledger.Ledger)(nil)
)

// Why a dead-letter message is left where it is (DeadLetter.Left).
const (
	LeftUnreadable   = "unreadable"     // not a message the processor can decode
	LeftGone         = "record gone"    // the ledger no longer holds its event: past its retention
	LeftNotThisEvent = "not this event" // not the event its record holds (ledger.Record.Mismatch)
)

// DeadLetter is one dead-letter message judged against the ledger.
type DeadLetter struct {
	Message queue.Message // decoded; zero when Left is LeftUnreadable
	Record  ledger.Record // the record it names; zero when there is none
	// Left is why the message must stay in the DLQ (a Left... constant), ""
	// when its body may be kept or the message redriven. Detail says more.
	Left   string
	Detail string
}

// JudgeDeadLetter decodes one dead-letter message body and reads its
// record: the filter the DLQ pass and hookledger replay --dlq share. A
// message is left when it is unreadable, its record is gone (the processor
// would drop it unrun), or it is not the event its record holds: the DLQ
// keeps messages 14 days and a record may expire sooner, so a key used
// again can name a newer event. Such a message is never redriven nor kept
// as a body; the operator drops it. A done record's own message is usable
// (a spent copy). An error means the ledger could not be read.
func JudgeDeadLetter(ctx context.Context, l RecordReader, body string) (DeadLetter, error) {
	msg, err := queue.Decode(body)
	if err != nil {
		return DeadLetter{Left: LeftUnreadable, Detail: err.Error()}, nil
	}
	dl := DeadLetter{Message: msg}
	rec, err := l.Get(ctx, msg.Key())
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		dl.Left, dl.Detail = LeftGone, "the ledger no longer holds its event (past its retention); the processor would drop it unrun"
		return dl, nil
	case err != nil:
		return dl, err
	}
	dl.Record = rec
	ev := ledger.Identity{Type: msg.Type, BodySHA256: msg.SHA256}
	if why := rec.Mismatch(ev); why != "" {
		dl.Left = LeftNotThisEvent
		dl.Detail = fmt.Sprintf("not the event the ledger holds under this key (%s: message type %q sha256 %s, record type %q sha256 %s, status %s): an earlier event's message under a key used again, or one with another type",
			why, msg.Type, orNone(msg.SHA256), rec.EventType, orNone(rec.BodySHA256), rec.Status)
	}
	return dl, nil
}

func orNone(s string) string { return cmp.Or(s, "(none)") }

// DeadLetterReport counts what a run did with the DLQ.
type DeadLetterReport struct {
	Read       int  `json:"read"`                 // messages received
	Kept       int  `json:"kept"`                 // bodies stored in the ledger that it lacked
	Cleared    int  `json:"cleared"`              // messages deleted: the ledger holds what they held
	Left       int  `json:"left"`                 // messages left for the operator (or a later run)
	Unreadable bool `json:"unreadable,omitempty"` // the queue could not be read this run
}

// Run reads up to Max messages until ctx ends; now is the run's clock.
func (d *DeadLetters) Run(ctx context.Context, log *slog.Logger, now time.Time) DeadLetterReport {
	var rep DeadLetterReport
	limit := fallback.Positive(d.Max, DefaultDeadLetters)
	for rep.Read < limit && ctx.Err() == nil {
		out, err := d.API.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(d.URL), MaxNumberOfMessages: int32(min(10, limit-rep.Read)), VisibilityTimeout: deadLetterVisibility,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAWSTraceHeader},
		})
		if err != nil {
			if ctx.Err() == nil {
				rep.Unreadable = true
				log.ErrorContext(ctx, "dead-letter queue unreadable this run: what it holds waits unseen (the reclaimer's role, or the queue)", "error", err.Error())
			}
			return rep
		}
		if len(out.Messages) == 0 {
			return rep
		}
		for _, m := range out.Messages {
			rep.Read++
			switch outcome := d.one(ctx, aws.ToString(m.Body), m.Attributes[queue.TraceAttribute], log, now); outcome {
			case dlqCleared, dlqKept:
				if outcome == dlqKept {
					rep.Kept++
				}
				if _, err := d.API.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(d.URL), ReceiptHandle: m.ReceiptHandle}); err != nil {
					// Read again later; the body is kept already.
					log.WarnContext(ctx, "dead-letter message not deleted", "error", err.Error())
					rep.Left++
					continue
				}
				rep.Cleared++
			default:
				rep.Left++
			}
		}
	}
	return rep
}

type dlqOutcome int

const (
	dlqLeft dlqOutcome = iota
	dlqCleared
	dlqKept
)

// one decides about one message, which came with trace header header.
func (d *DeadLetters) one(ctx context.Context, body, header string, log *slog.Logger, now time.Time) dlqOutcome {
	dl, err := JudgeDeadLetter(ctx, d.Ledger, body)
	msg, rec := dl.Message, dl.Record
	if dl.Left != LeftUnreadable {
		log = log.With("source", msg.Source, "tenant", msg.Tenant, "event_id", msg.ID, "trace_id", trace.ID(cmp.Or(rec.Trace, header)))
	}
	switch {
	case err != nil:
		log.WarnContext(ctx, "dead-letter message: ledger unreadable; looked at again next run", "error", err.Error())
		return dlqLeft
	case dl.Left == LeftNotThisEvent:
		log.WarnContext(ctx, "dead-letter message of another event than its record's; left in the DLQ for the operator (hookledger replay --dlq lists it, --drop-skipped deletes it)",
			"status", string(rec.Status), "reason", dl.Detail, "message_sha256", msg.SHA256, "record_sha256", rec.BodySHA256,
			"message_type", msg.Type, "record_type", rec.EventType)
		return dlqLeft
	case dl.Left != "":
		log.WarnContext(ctx, "dead-letter message left in the DLQ", "reason", dl.Left, "detail", dl.Detail)
		return dlqLeft
	case rec.Status == ledger.Done:
		return dlqCleared // finished since: the message is a spent copy
	case msg.BodyOmitted || msg.Ref != "" || rec.PayloadRef != "":
		// The body belongs in the payload store, or the message lacks it:
		// storing it helps nobody, and deleting could lose the only copy.
		log.WarnContext(ctx, "dead-letter message of an event whose body belongs in the payload store; left in the DLQ for hookledger replay --dlq", "status", string(rec.Status))
		return dlqLeft
	}
	kept, err := d.Ledger.EnsurePayload(ctx, msg.Key(), msg.Body, ledger.Identity{Type: msg.Type, BodySHA256: msg.SHA256})
	if err != nil {
		// ErrNotThisEvent: the record changed under the key since Get.
		log.WarnContext(ctx, "dead-letter message: body not stored; looked at again next run", "error", err.Error())
		return dlqLeft
	}
	if rec.Status == ledger.Dead {
		log.WarnContext(ctx, "dead-letter message of a dead event: its body is in the ledger; replay it with hookledger replay", "kept", kept)
	} else {
		// Due now, so this run re-drives it, not the look its wait had set
		// (up to an hour away). A live lease's holder decides for itself.
		if !rec.LeaseLive(now) {
			if _, err := d.Ledger.Postpone(ctx, rec, now); err != nil && !errors.Is(err, ledger.ErrConflict) {
				log.WarnContext(ctx, "dead-letter message: record not made due now; it is re-driven at its next look", "error", err.Error())
			}
		}
		log.WarnContext(ctx, "dead-letter message: its body is in the ledger, and the reclaimer re-drives the event", "status", string(rec.Status), "kept", kept)
	}
	if kept {
		return dlqKept
	}
	return dlqCleared
}

// deadLetterBudget is how long a run spends on the DLQ at most.
const deadLetterBudget = 10 * time.Second
