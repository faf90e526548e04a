// Package trace carries an event's trace context from its first delivery to
// every run and re-drive, and, when a deployment asks for them, records
// spans (docs/configuration.md, "Tracing").
//
// The context is X-Ray's trace header, the one SQS carries in a message's
// AWSTraceHeader system attribute: the receiver takes its invocation's (or
// makes one), sends it with the message and keeps it in the record; every
// re-send sends the record's. Log lines about an event carry its root as
// trace_id. Spans follow the OpenTelemetry conventions for an SQS-triggered
// Lambda and are off unless a Tracer is built (New); a nil *Tracer and a
// nil *Span do nothing, allocate nothing and start no goroutine.
package trace

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"time"
)

// Context is a trace context as an X-Ray trace header carries it.
type Context struct {
	Trace   [16]byte // the root: 4 bytes of seconds, then 12 random
	Parent  [8]byte  // the span that sent it; zero: none named
	Sampled bool
}

// Valid reports whether c names a trace.
func (c Context) Valid() bool { return c.Trace != [16]byte{} }

// NewRoot makes a context in a new trace at now, with a fresh parent: what
// the receiver sends when its invocation brought none (hookledger dev).
func NewRoot(now time.Time, sampled bool) Context {
	var c Context
	binary.BigEndian.PutUint32(c.Trace[:4], uint32(now.Unix()))
	binary.BigEndian.PutUint32(c.Trace[4:8], rand.Uint32())
	binary.BigEndian.PutUint64(c.Trace[8:], rand.Uint64())
	c.Parent = newID()
	c.Sampled = sampled
	return c
}

func newID() [8]byte {
	var id [8]byte
	binary.BigEndian.PutUint64(id[:], rand.Uint64()|1) // never zero
	return id
}

// rootLen is the length of a root: "1-" and 8 and 24 hex digits.
const rootLen = 35

// Parse reads an X-Ray trace header ("Root=1-...;Parent=...;Sampled=1").
// Keys it does not use (Lineage, Self) are left out; a missing or malformed
// Root, or a malformed Parent, is not a context (ok false).
func Parse(h string) (c Context, ok bool) {
	for h != "" {
		var part string
		part, h, _ = strings.Cut(h, ";")
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Root":
			if len(v) != rootLen || v[:2] != "1-" || v[10] != '-' ||
				!unhex(c.Trace[:4], v[2:10]) || !unhex(c.Trace[4:], v[11:]) {
				return Context{}, false
			}
		case "Parent":
			if len(v) != 16 || !unhex(c.Parent[:], v) {
				return Context{}, false
			}
		case "Sampled":
			c.Sampled = v == "1"
		}
	}
	return c, c.Valid()
}

func unhex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := fromHex(s[2*i])
		lo, ok2 := fromHex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func fromHex(b byte) (byte, bool) {
	switch {
	case '0' <= b && b <= '9':
		return b - '0', true
	case 'a' <= b && b <= 'f':
		return b - 'a' + 10, true
	case 'A' <= b && b <= 'F':
		return b - 'A' + 10, true
	}
	return 0, false
}

// Header renders c as SQS's AWSTraceHeader takes it: Root, Parent when
// known, Sampled. Nothing else travels: a Lineage would count every
// re-drive toward Lambda's recursive loop limit.
func (c Context) Header() string {
	if !c.Valid() {
		return ""
	}
	b := make([]byte, 0, 74)
	b = append(b, "Root="...)
	b = c.appendID(b)
	if c.Parent != [8]byte{} {
		b = append(b, ";Parent="...)
		b = hex.AppendEncode(b, c.Parent[:])
	}
	b = append(b, ";Sampled="...)
	if c.Sampled {
		b = append(b, '1')
	} else {
		b = append(b, '0')
	}
	return string(b)
}

// ID is the root, the trace_id of log lines: "1-" and 8 and 24 hex digits.
func (c Context) ID() string {
	if !c.Valid() {
		return ""
	}
	return string(c.appendID(make([]byte, 0, rootLen)))
}

func (c Context) appendID(b []byte) []byte {
	b = append(b, "1-"...)
	b = hex.AppendEncode(b, c.Trace[:4])
	b = append(b, '-')
	return hex.AppendEncode(b, c.Trace[4:])
}

// ID is the root of header h, or "" if h is not a trace header. It
// allocates nothing.
func ID(h string) string {
	i := strings.Index(h, "Root=")
	if i < 0 || len(h) < i+5+rootLen {
		return ""
	}
	id := h[i+5 : i+5+rootLen]
	var scratch [16]byte
	if id[:2] != "1-" || id[10] != '-' || !unhex(scratch[:4], id[2:10]) || !unhex(scratch[4:], id[11:]) {
		return ""
	}
	return id
}

// lambdaKey is where aws-lambda-go puts an invocation's trace header.
const lambdaKey = "x-amzn-trace-id"

// FromLambda is the trace context Lambda gave the invocation running in
// ctx (ok false outside Lambda, or without one).
func FromLambda(ctx context.Context) (Context, bool) {
	h, _ := ctx.Value(lambdaKey).(string)
	return Parse(h)
}
