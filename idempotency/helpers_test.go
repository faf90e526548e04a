package idempotency_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/middleware"
)

// quietLogger keeps warnings visible in verbose runs only.
func quietLogger() *slog.Logger {
	if os.Getenv("IDEMPOTENCY_TEST_LOG") != "" {
		return slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

func jsonLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }

// emulatorConfig is an SDK config for the local AWS emulator (MiniStack or
// LocalStack) at HOOKLEDGER_TEST_ENDPOINT or AWS_ENDPOINT_URL, with dummy
// credentials and apiOptions on every client. Tests never reach AWS: the
// endpoint must be a loopback address. Without one the test skips, or
// fails when HOOKLEDGER_REQUIRE_EMULATOR=1 (make test sets it).
func emulatorConfig(t testing.TB, apiOptions ...func(*middleware.Stack) error) aws.Config {
	t.Helper()
	ep := os.Getenv("HOOKLEDGER_TEST_ENDPOINT")
	if ep == "" {
		ep = os.Getenv("AWS_ENDPOINT_URL")
	}
	if ep == "" {
		if os.Getenv("HOOKLEDGER_REQUIRE_EMULATOR") == "1" {
			t.Fatal("HOOKLEDGER_REQUIRE_EMULATOR=1 but no emulator endpoint: set HOOKLEDGER_TEST_ENDPOINT=http://localhost:4566")
		}
		t.Skip("integration test: no emulator endpoint; start MiniStack (pip install ministack) and set HOOKLEDGER_TEST_ENDPOINT=http://localhost:4566")
	}
	u, err := url.Parse(ep)
	if err != nil {
		t.Fatalf("emulator endpoint %q: %v", ep, err)
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		t.Fatalf("emulator endpoint %q is not a loopback address; tests never reach real AWS", ep)
	}
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"), config.WithBaseEndpoint(ep),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")), config.WithAPIOptions(apiOptions))
	if err != nil {
		t.Fatalf("load AWS config: %v", err)
	}
	return cfg
}

// uniqueName is prefix and 10 random hex digits: a table or key no other
// test uses.
func uniqueName(prefix string) string {
	var b [5]byte
	rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// meter counts the calls SDK clients make, keyed "Service.Operation"
// ("DynamoDB.PutItem"), once per call however often the SDK retries it.
type meter struct {
	mu     sync.Mutex
	counts map[string]int
}

func newMeter() *meter { return &meter{counts: map[string]int{}} }

// APIOption installs the meter on a client (emulatorConfig's apiOptions).
func (m *meter) APIOption(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("idempotency.meter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			m.mu.Lock()
			m.counts[awsmiddleware.GetServiceID(ctx)+"."+awsmiddleware.GetOperationName(ctx)]++
			m.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// Snapshot returns a copy of the counts.
func (m *meter) Snapshot() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.counts))
	for k, v := range m.counts {
		out[k] = v
	}
	return out
}

// Reset forgets every count.
func (m *meter) Reset() {
	m.mu.Lock()
	clear(m.counts)
	m.mu.Unlock()
}

// testClock is a settable clock, safe for concurrent use: tests move time
// instead of sleeping.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *testClock { return &testClock{t: t} }

// Now returns the clock's time.
func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock by d.
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
