package receiver

import (
	"context"
	"net/http"

	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/webhook"
)

// route is the HTTP API's route, the receiver span's name.
const route = "/webhooks/{source}/{tenant}"

// invocation is the trace context Lambda gave this invocation (none in hookledger dev).
func (h *Handler) invocation(ctx context.Context) trace.Context {
	c, _ := trace.FromLambda(ctx)
	return c
}

// eventContext is what a new event keeps and sends: the receiver span, or
// the invocation's context, or (in hookledger dev) a new unsampled one.
func (h *Handler) eventContext(ctx context.Context) trace.Context {
	if sp := trace.SpanOf(ctx); sp != nil {
		return sp.Context()
	}
	if c, ok := trace.FromLambda(ctx); ok {
		return c
	}
	return trace.NewRoot(h.now(), false)
}

// endClaim ends the claim span with what the conditional put found.
func endClaim(sp *trace.Span, created bool, err error) {
	switch {
	case err != nil:
		sp.Fail(err.Error())
	case created:
		sp.Str("hookledger.claim", "created")
	default:
		sp.Str("hookledger.claim", "duplicate")
	}
	sp.End()
}

// endRequest ends the receiver span with the answer and exports the spans.
func (h *Handler) endRequest(ctx context.Context, sp *trace.Span, a answer, ev webhook.Event, src, tenant string) {
	if sp == nil {
		return
	}
	sp.Str("faas.trigger", "http")
	sp.Str("http.request.method", http.MethodPost)
	sp.Str("http.route", route)
	sp.Int("http.response.status_code", int64(a.status))
	sp.Str("hookledger.source", src)
	sp.Str("hookledger.tenant", tenant)
	sp.Str("hookledger.result", string(a.result))
	if ev.ID != "" {
		sp.Str("hookledger.event_id", ev.ID)
		sp.Str("hookledger.event_type", ev.Type)
	}
	if a.status >= 500 {
		sp.Fail(string(a.result))
	}
	sp.End()
	h.Trace.Flush(ctx)
}
