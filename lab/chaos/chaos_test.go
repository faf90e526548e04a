package chaos

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/awstest"
)

// goTool is the go command that runs this test.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	// `go test` puts its own go command first on PATH; GOROOT is the fallback.
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "go"
}

// moduleRoot is the directory of go.mod, two levels up from here.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found from the test's directory: %v", err)
	}
	return root
}

// TestChaosShort is a small run of the same harness `make chaos` runs: a
// crash-point binary, every fault kind, a few hundred deliveries, against
// the emulator. It fails on any duplicate effect, lost event, stray record
// or message, or wrongly answered invalid request.
func TestChaosShort(t *testing.T) {
	endpoint := awstest.Endpoint(t)
	if testing.Short() {
		t.Skip("the chaos run takes a minute or two; not in -short")
	}
	root := moduleRoot(t)
	dir := t.TempDir()
	bin, lab := filepath.Join(dir, "hookledger"), filepath.Join(dir, "hooklab")
	start := time.Now()
	build := exec.CommandContext(t.Context(), goTool(), "build", "-tags", "crashpoints", "-o", dir+"/", "./cmd/hookledger", "./lab/cmd/hooklab")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags crashpoints: %v\n%s", err, out)
	}
	t.Logf("built the crash-point binaries in %.1fs", time.Since(start).Seconds())

	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{
		Binary: bin, Lab: lab, Endpoint: endpoint, Deliveries: 400, Kinds: Kinds, Payloads: []string{"always", "on-trouble"}, Concurrency: 8, Workers: 2,
		Timeout: 150 * time.Second, Parallel: true, LogDir: t.TempDir(), Progress: &progress,
	})
	var table bytes.Buffer
	if rep != nil {
		rep.Print(&table)
	}
	t.Logf("chaos run in %.1fs:\n%s\n%s", time.Since(start).Seconds(), progress.String(), table.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Phases) != 2*len(Kinds) {
		t.Fatalf("%d phases ran, want %d (every kind under both payload policies)", len(rep.Phases), 2*len(Kinds))
	}
	if !rep.OK() {
		t.Fatal("the chaos run found problems; see the table above")
	}
}

func TestParseKinds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want string
		err  bool
	}{
		{"all", "crash,duplicates,aws,slow,interrupts", false},
		{"crash", "crash", false},
		{" slow , aws,slow", "slow,aws", false},
		{"", "", true},
		{"crash,typo", "", true},
	} {
		ks, err := ParseKinds(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("ParseKinds(%q) error %v", tc.in, err)
			continue
		}
		var s []string
		for _, k := range ks {
			s = append(s, string(k))
		}
		if got := strings.Join(s, ","); got != tc.want {
			t.Errorf("ParseKinds(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestValidateFaults(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{DefaultFaults, "dynamodb.throttle=1", "*.timeout=0.5", ""} {
		if err := ValidateFaults(ok); err != nil {
			t.Errorf("ValidateFaults(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"dynamodb.slow=0.1", "dynamodb.throttle", "dynamodb.500=1.5", "seed=4", "throttle=0.1"} {
		if err := ValidateFaults(bad); err == nil {
			t.Errorf("ValidateFaults(%q) accepted it", bad)
		}
	}
}

func TestLoopback(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"http://localhost:4566", "http://127.0.0.1:4588", "http://[::1]:4566"} {
		if err := Loopback(ok); err != nil {
			t.Errorf("Loopback(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "https://dynamodb.us-east-1.amazonaws.com", "http://10.0.0.1:4566", "localhost:4566"} {
		if err := Loopback(bad); err == nil {
			t.Errorf("Loopback(%q) accepted it", bad)
		}
	}
}
