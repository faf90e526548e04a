package trace

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hookledger/hookledger/internal/fallback"
)

// Kind is a span's kind, numbered as OTLP numbers them.
type Kind int8

// The span kinds the pipeline records.
const (
	Internal Kind = 1
	Server   Kind = 2
	Producer Kind = 4
	Consumer Kind = 5
)

// Attr is one span attribute: a string, or an integer when IsInt.
type Attr struct {
	Key   string
	Str   string
	Int   int64
	IsInt bool
}

// Span is one timed operation. Its methods do nothing on a nil *Span,
// which is what every start returns while spans are off or unsampled.
// A span is written by one goroutine at a time.
type Span struct {
	t      *Tracer
	Name   string
	Kind   Kind
	Trace  [16]byte
	ID     [8]byte
	Parent [8]byte // zero: a root
	Began  time.Time
	Ended  time.Time
	Attrs  []Attr
	Links  []Context
	Error  string // the status message when the operation failed
}

// Tracer records spans and hands them to its exporter at Flush. A nil
// *Tracer records nothing.
type Tracer struct {
	export func(ctx context.Context, spans []*Span) error
	now    func() time.Time
	log    *slog.Logger

	mu     sync.Mutex
	ended  []*Span
	warned time.Time
}

// maxBuffered bounds the spans a Tracer keeps between flushes.
const maxBuffered = 4096

// NewTracer returns a tracer that hands ended spans to export at Flush.
// now is its clock (nil: time.Now); export failures go to log.
func NewTracer(export func(ctx context.Context, spans []*Span) error, now func() time.Time, log *slog.Logger) *Tracer {
	return &Tracer{export: export, now: now, log: log}
}

// Start begins a span whose parent is parent, or a root span in a new
// trace when parent names none. A parent that is not sampled starts
// nothing: its trace is not recorded.
func (t *Tracer) Start(kind Kind, op, dest string, parent Context) *Span {
	if t == nil || parent.Valid() && !parent.Sampled {
		return nil
	}
	s := &Span{t: t, Name: name(op, dest), Kind: kind, Began: fallback.Now(t.now)}
	if parent.Valid() {
		s.Trace, s.Parent = parent.Trace, parent.Parent
	} else {
		s.Trace = NewRoot(s.Began, true).Trace
	}
	s.ID = newID()
	return s
}

func name(op, dest string) string {
	if dest == "" {
		return op
	}
	return op + " " + dest
}

// Child begins a span under s.
func (s *Span) Child(kind Kind, op, dest string) *Span {
	if s == nil {
		return nil
	}
	return s.t.Start(kind, op, dest, s.Context())
}

// Continue begins a span in the trace of the event whose header is h, as a
// child of the span h names, linked to s when that is another trace (a
// re-drive, or a duplicate's re-enqueue). Without a trace in h, the span
// begins under s.
func (s *Span) Continue(h string, kind Kind, op, dest string) *Span {
	if s == nil {
		return nil
	}
	ev, ok := Parse(h)
	if !ok {
		return s.Child(kind, op, dest)
	}
	c := s.t.Start(kind, op, dest, ev)
	if ev.Trace != s.Trace {
		c.Link(s.Context())
	}
	return c
}

// Context is what a message sent under s carries: s as the parent.
func (s *Span) Context() Context {
	if s == nil {
		return Context{}
	}
	return Context{Trace: s.Trace, Parent: s.ID, Sampled: true}
}

// Str sets a string attribute. Not inlined, as Int: a call per attribute
// is smaller than its body at every call site.
//
//go:noinline
func (s *Span) Str(key, v string) {
	if s != nil {
		s.Attrs = append(s.Attrs, Attr{Key: key, Str: v})
	}
}

// Int sets an integer attribute.
//
//go:noinline
func (s *Span) Int(key string, v int64) {
	if s != nil {
		s.Attrs = append(s.Attrs, Attr{Key: key, Int: v, IsInt: true})
	}
}

// Link links s to the span c names, if it names one.
func (s *Span) Link(c Context) {
	if s != nil && c.Valid() && c.Parent != [8]byte{} {
		s.Links = append(s.Links, c)
	}
}

// Fail marks the operation failed, with a short reason.
func (s *Span) Fail(reason string) {
	if s != nil {
		const max = 256
		if len(reason) > max {
			reason = reason[:max]
		}
		s.Error = reason
	}
}

// End ends s; the tracer exports it at its next Flush.
func (s *Span) End() {
	if s == nil {
		return
	}
	s.Ended = fallback.Now(s.t.now)
	t := s.t
	t.mu.Lock()
	if len(t.ended) < maxBuffered {
		t.ended = append(t.ended, s)
	}
	t.mu.Unlock()
}

// An export takes at most flushTimeout, and ends flushMargin before the
// invocation's deadline: Lambda freezes the process once the handler
// returns, so a function flushes before it does, and never times out for it.
const (
	flushTimeout = 2 * time.Second
	flushMargin  = 250 * time.Millisecond
)

// Flush exports the spans ended since the last Flush. A failed export is
// logged (at most once a minute) and its spans dropped: tracing never fails
// an invocation.
func (t *Tracer) Flush(ctx context.Context) {
	if t == nil {
		return
	}
	t.mu.Lock()
	spans := t.ended
	t.ended = nil
	t.mu.Unlock()
	if len(spans) == 0 {
		return
	}
	budget := flushTimeout
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl)-flushMargin)
	}
	err := context.DeadlineExceeded
	if budget > 0 {
		ectx, cancel := context.WithTimeout(ctx, budget)
		err = t.export(ectx, spans)
		cancel()
	}
	if err != nil {
		now := fallback.Now(t.now)
		t.mu.Lock()
		warn := now.Sub(t.warned) >= time.Minute
		if warn {
			t.warned = now
		}
		t.mu.Unlock()
		if warn {
			fallback.Logger(t.log).WarnContext(ctx, "spans not exported; they are dropped (HOOKLEDGER_SPANS)", "spans", len(spans), "error", err.Error())
		}
	}
}

type spanKey struct{}

// With returns ctx carrying s as the current span (ctx itself when s is nil).
func With(ctx context.Context, s *Span) context.Context {
	if s == nil {
		return ctx
	}
	return context.WithValue(ctx, spanKey{}, s)
}

// SpanOf is the current span of ctx, or nil.
func SpanOf(ctx context.Context) *Span {
	s, _ := ctx.Value(spanKey{}).(*Span)
	return s
}
