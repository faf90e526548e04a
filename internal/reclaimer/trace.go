package reclaimer

import (
	"context"

	"github.com/hookledger/hookledger/internal/trace"
)

// traced is a run under its span. Each re-drive's send span continues the
// event's trace from its record's header, linked to this run's span
// (queue.BatchSender.SendBatch).
func (h *Handler) traced(ctx context.Context, ev any) (Report, error) {
	lam, _ := trace.FromLambda(ctx)
	sp := h.Trace.Start(trace.Server, "reclaim", "", lam)
	sp.Str("faas.trigger", "timer")
	rep, err := h.handle(trace.With(ctx, sp), ev)
	sp.Int("hookledger.requeued", int64(rep.Requeued))
	sp.Int("hookledger.reset", int64(rep.Reset))
	sp.Int("hookledger.buried", int64(rep.Buried))
	sp.Int("hookledger.errors", int64(rep.Errors))
	sp.Str("hookledger.stopped", string(rep.Stopped))
	if err != nil {
		sp.Fail(err.Error())
	}
	sp.End()
	h.Trace.Flush(ctx)
	return rep, err
}
