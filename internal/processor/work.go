package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/fallback"
	"github.com/hookledger/hookledger/internal/forward"
	"github.com/hookledger/hookledger/internal/inject"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// objects reads bodies from the S3 payload store.
type objects interface {
	Get(ctx context.Context, key string) ([]byte, error)
}

// publisher puts forwarded events on the forward bus (Event.Forward).
type publisher interface {
	Publish(ctx context.Context, f engine.Forwarded) (string, error)
}

var (
	_ objects   = (*blob.Store)(nil)
	_ publisher = (*forward.Publisher)(nil)
)

// work is one claimed event: the steps' store, writing under the lease,
// and the guard of an InOrder route.
type work struct {
	h     *Handler
	log   *slog.Logger
	mu    sync.Mutex
	lease ledger.Lease
	// extending makes ExtendLease calls take turns: each computes the new
	// end from the lease the one before it wrote, so two calls at once (a
	// heartbeat and the handler) cannot leave the shorter end last.
	extending sync.Mutex
}

func (w *work) Save(ctx context.Context, changes []engine.Change) error {
	w.mu.Lock()
	lease := w.lease
	w.mu.Unlock()
	rec, err := w.h.Ledger.SaveSteps(ctx, lease, ledgerChanges(changes)...)
	if errors.Is(err, ledger.ErrLeaseLost) {
		return fmt.Errorf("%w: %w", engine.ErrLeaseLost, err)
	}
	if err != nil {
		return err
	}
	// The lease carries the record as last written (an Extend may have
	// written since), so that a Fail knows a step started here without a
	// second write (see ledger.Fail).
	w.mu.Lock()
	if rec.Version > w.lease.Record.Version {
		w.lease.Record = rec
	}
	w.mu.Unlock()
	return nil
}

func (w *work) LeaseLost(err error) bool { return errors.Is(err, engine.ErrLeaseLost) }

func (w *work) extend(ctx context.Context, d time.Duration) error {
	w.extending.Lock()
	defer w.extending.Unlock()
	w.mu.Lock()
	lease := w.lease
	w.mu.Unlock()
	nl, err := w.h.Ledger.Extend(ctx, lease, d)
	if errors.Is(err, ledger.ErrLeaseLost) {
		return fmt.Errorf("%w: %w", engine.ErrLeaseLost, err)
	}
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.lease = nl
	w.mu.Unlock()
	return nil
}

func recorded(in map[string]ledger.Step) map[string]engine.State {
	out := make(map[string]engine.State, len(in))
	for k, v := range in {
		out[k] = engine.State{Status: engine.Status(v.Status), Result: v.Result}
	}
	return out
}

func ledgerChanges(in []engine.Change) []ledger.StepChange {
	out := make([]ledger.StepChange, len(in))
	for i, c := range in {
		out[i] = ledger.StepChange{Name: c.Name, Status: ledger.StepStatus(c.Status), Result: c.Result, Checked: c.Checked}
	}
	return out
}

// safeRun runs the user's handler, turning a panic into an error.
func safeRun(ctx context.Context, h engine.Handler, ev engine.Event, run *engine.Run) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panic: %v", p)
		}
	}()
	return h.Run(ctx, ev, run)
}

func (h *Handler) logger() *slog.Logger { return fallback.Logger(h.Log) }

func (h *Handler) now() time.Time { return fallback.Now(h.Now) }

func (h *Handler) point(p string) {
	if h.Point != nil {
		h.Point(p)
		return
	}
	inject.Crash(p)
}

// forwarder is the steps' Forward hook: nil without a forward bus.
func (h *Handler) forwarder() func(ctx context.Context, f engine.Forwarded) (string, error) {
	if h.Forward == nil {
		return nil
	}
	return h.Forward.Publish
}

// receiveCount is the message's ApproximateReceiveCount (1 when absent).
func receiveCount(msg events.SQSMessage) int {
	n, err := strconv.Atoi(msg.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// identity is what a message says its event is.
func identity(m queue.Message) ledger.Identity {
	return ledger.Identity{Type: m.Type, BodySHA256: m.SHA256}
}

// receivedAt is when the receiver accepted the event: the message says,
// or else its record's creation.
func receivedAt(m queue.Message, rec ledger.Record) time.Time {
	if m.ReceivedAt == 0 {
		return rec.CreatedAt
	}
	return time.UnixMilli(m.ReceivedAt).UTC()
}
