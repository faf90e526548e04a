package hookledger

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hookledger/hookledger/ledger"
)

// Handler performs an event's side effects. Returning nil marks the event
// done; an error retries it later, and Permanent(err) sends it to dead.
type Handler interface {
	HandleEvent(ctx context.Context, ev *Event) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, ev *Event) error

// HandleEvent calls f.
func (f HandlerFunc) HandleEvent(ctx context.Context, ev *Event) error { return f(ctx, ev) }

// Any matches every source or every event type in a route. Use it only
// where you mean it: Any takes whatever any configured sender delivers.
const Any = "*"

// Router routes events to handlers by source and event type. The most
// specific route wins: source and type, source and Any, Any and type, then
// Any and Any. Lookups are safe for concurrent use once registration is
// done.
type Router struct {
	routes map[[2]string]Handler
}

// NewRouter returns an empty router.
func NewRouter() *Router { return &Router{routes: map[[2]string]Handler{}} }

// Handle routes events of source and eventType to h. A source is Any or a
// configured source's name (1 to 64 letters, digits, '.', '_' or '-',
// starting with a letter or digit). A type is Any or one exact event type
// of at most 256 bytes: there are no patterns. Options apply to this route
// only: InOrder, SkipStale.
//
// It panics on a route that can never match, a nil handler or a duplicate
// route: such mistakes stop the processor at cold start, not drop events.
func (r *Router) Handle(source, eventType string, h Handler, opts ...RouteOption) {
	if source == "" || eventType == "" {
		panic(fmt.Sprintf("hookledger: route %q/%q: source and event type must not be empty (use hookledger.Any to match all)", source, eventType))
	}
	if source != Any && !ledger.ValidName(source) {
		panic(fmt.Sprintf("hookledger: route %q/%q: %q is not a source name, so no event can match it: write the source's name as configured in the sources JSON (%s), or hookledger.Any for every source", source, eventType, source, ledger.NameRule))
	}
	if eventType != Any {
		if why := badType(eventType); why != "" {
			panic(fmt.Sprintf("hookledger: route %q/%q: %s, so no event can match it: write one exact event type per route (e.g. \"invoice.paid\"), or hookledger.Any and switch on ev.Type in the handler", source, eventType, why))
		}
	}
	if h == nil {
		panic(fmt.Sprintf("hookledger: nil handler for %s/%s", source, eventType))
	}
	k := [2]string{source, eventType}
	if _, dup := r.routes[k]; dup {
		panic(fmt.Sprintf("hookledger: duplicate route %s/%s", source, eventType))
	}
	if len(opts) > 0 {
		rt := &route{h: h}
		for _, o := range opts {
			if o.apply == nil {
				panic(fmt.Sprintf("hookledger: route %s/%s: a zero RouteOption; use InOrder or SkipStale", source, eventType))
			}
			o.apply(rt)
		}
		if rt.skip && rt.order == nil {
			panic(fmt.Sprintf("hookledger: route %s/%s: SkipStale needs InOrder, which says what makes an event stale", source, eventType))
		}
		h = rt
	}
	r.routes[k] = h
}

// badType says why no delivered event can have type t, or "".
func badType(t string) string {
	if strings.Contains(t, Any) {
		return "routes match exact types, and '*' is not a pattern"
	}
	if err := ledger.CheckType(t); err != nil {
		return "the receiver refuses such a type (" + err.Error() + ")"
	}
	return ""
}

// HandleFunc is Handle for a function.
func (r *Router) HandleFunc(source, eventType string, f func(ctx context.Context, ev *Event) error, opts ...RouteOption) {
	if f == nil {
		r.Handle(source, eventType, nil, opts...)
		return
	}
	r.Handle(source, eventType, HandlerFunc(f), opts...)
}

// Lookup returns the handler for an event, or nil when no route matches.
func (r *Router) Lookup(source, eventType string) Handler {
	for _, k := range [][2]string{{source, eventType}, {source, Any}, {Any, eventType}, {Any, Any}} {
		if h, ok := r.routes[k]; ok {
			return h
		}
	}
	return nil
}

// names lists the routes as "source/type", sorted, for the cold start log.
func (r *Router) names() []string {
	out := make([]string, 0, len(r.routes))
	for k := range r.routes {
		out = append(out, k[0]+"/"+k[1])
	}
	sort.Strings(out)
	return out
}
