package trace_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/trace"
)

// Lambda's header as an invocation gets it, Lineage included.
const lambdaHeader = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1;Lineage=1:a1b2c3d4:0"

// A header travels without what the pipeline does not use: a Lineage
// carried into every re-drive would count toward Lambda's recursive loop
// limit.
func TestHeaderKeepsRootParentAndSampled(t *testing.T) {
	t.Parallel()
	c, ok := trace.Parse(lambdaHeader)
	if !ok {
		t.Fatal("Lambda's header did not parse")
	}
	if got, want := c.Header(), "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"; got != want {
		t.Errorf("Header() = %q, want %q", got, want)
	}
	if got := c.ID(); got != "1-5759e988-bd862e3fe1be46a994272793" {
		t.Errorf("ID() = %q", got)
	}
	if again, ok := trace.Parse(c.Header()); !ok || again != c {
		t.Errorf("round trip: %+v %v, want %+v", again, ok, c)
	}
	if got := trace.ID(lambdaHeader); got != c.ID() {
		t.Errorf("trace.ID = %q, want %q", got, c.ID())
	}
}

func TestParseRefusesWhatIsNotATraceHeader(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		h      string
		rootOK bool // trace.ID still reads the root
	}{
		{"", false},
		{"Parent=53995c3f42cd8ad8;Sampled=1", false},
		{"Root=1-5759e988-bd862e3fe1be46a99427279;Sampled=1", false}, // short root
		{"Root=2-5759e988-bd862e3fe1be46a994272793", false},          // version
		{"Root=1-5759e98g-bd862e3fe1be46a994272793", false},          // not hex
		{"Root=1-00000000-000000000000000000000000", true},           // zero
		{"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42", true},
		{"garbage", false},
	} {
		if c, ok := trace.Parse(tt.h); ok {
			t.Errorf("Parse(%q) = %+v, want not ok", tt.h, c)
		}
		if id := trace.ID(tt.h); (id != "") != tt.rootOK {
			t.Errorf("ID(%q) = %q", tt.h, id)
		}
	}
}

// hookledger dev has no invocation header: the receiver makes a root
// whose first 8 hex digits are the time, as X-Ray's are.
func TestNewRootIsAnXRayRootAtNow(t *testing.T) {
	t.Parallel()
	now := time.Unix(0x6b1161f1, 0)
	c := trace.NewRoot(now, false)
	if !strings.HasPrefix(c.ID(), "1-6b1161f1-") || c.Sampled {
		t.Errorf("NewRoot = %s (sampled %v), want 1-6b1161f1-..., not sampled", c.ID(), c.Sampled)
	}
	h := c.Header()
	if p, ok := trace.Parse(h); !ok || p.Parent == [8]byte{} || p != c {
		t.Errorf("NewRoot's header %q: parsed %+v %v; want a parent and the same context", h, p, ok)
	}
	if trace.NewRoot(now, false).Trace == c.Trace {
		t.Error("two roots at one second are the same trace")
	}
}

func TestFromLambdaReadsTheInvocationsHeader(t *testing.T) {
	t.Parallel()
	if _, ok := trace.FromLambda(t.Context()); ok {
		t.Error("a context without Lambda's header gave a trace context")
	}
	//lint:ignore SA1029 the key aws-lambda-go uses, a plain string
	ctx := context.WithValue(t.Context(), "x-amzn-trace-id", lambdaHeader)
	c, ok := trace.FromLambda(ctx)
	if !ok || c.ID() != "1-5759e988-bd862e3fe1be46a994272793" || !c.Sampled {
		t.Errorf("FromLambda = %+v %v", c, ok)
	}
}

// Every event's log lines carry its trace id: reading it allocates nothing.
func TestIDAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = trace.ID(lambdaHeader) }); n != 0 {
		t.Errorf("trace.ID allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = trace.Parse(lambdaHeader) }); n != 0 {
		t.Errorf("trace.Parse allocates %v times", n)
	}
}
