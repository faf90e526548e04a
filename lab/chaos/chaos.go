// Package chaos is hookledger's fault-injection harness. It drives the real
// pipeline — several `hooklab dev` processes, the very handler code the
// Lambdas run, sharing one table and one queue in an AWS emulator — with
// signed deliveries from a sender that behaves like a real provider, injects
// one kind of fault per phase, and checks the outcome against an
// independent oracle: the stub's count of charges and notifications per
// event, and what the harness itself sent and saw answered. The handler is
// the shipped effect: a charge (an at-least-once step against an API that
// honours Idempotency-Key) and a notification (an at-most-once step against
// an API with no idempotency at all).
//
// The fault kinds:
//
//   - crash: every dev process runs with a crash point armed
//     (HOOKLEDGER_CRASH=name:N) and is restarted after it fires; the armed
//     point rotates over every boundary of the three functions and of the
//     handler's steps (after the charge, between the notification's started
//     mark and its request, after the notification), least fired first. A
//     process whose point does not fire in time is killed with SIGKILL.
//   - duplicates: 30% of events delivered again (in sequence, out of order,
//     and after they are done), 50-way concurrent bursts.
//   - aws: DynamoDB and SQS throttling, 500s, client timeouts and timeouts
//     after a write that succeeded, on a share of SDK attempts
//     (HOOKLEDGER_FAULTS, see package fault).
//   - slow: payments and notification APIs slow on a share of requests,
//     which keep going after the worker gave up, with a visibility timeout
//     shorter than the handler, so SQS redelivers while the first worker
//     still runs and a second worker takes over a half-done event.
//   - interrupts: the same few events killed again and again: the process
//     running each of them is killed (SIGKILL) in the middle of each of
//     their first runs, more of them than the handler's MaxAttempts, while
//     it waits on the event's effect request (made or not); half of them
//     then fail once by their own effect. Each must end done, its effects
//     applied once, its record counting the kills as interrupted runs and
//     not as failures (see interrupts.go).
//
// Every phase also sends invalid requests (bad signatures, another tenant's
// secret, odd paths, wrong methods, oversized, malformed or non-UTF-8
// bodies, huge headers) that must get their specific status and leave no
// record and no message, a few events whose handler fails permanently (they
// must end dead, explained, and be replayable), and late redeliveries of
// finished events.
//
// The oracle's verdicts: every event answered 2xx is charged exactly once
// and notified exactly once (events meant to die: neither) and ends done or
// dead; no event is charged or notified twice; no rejected request left a
// record or a message. A run with a duplicate effect or a lost event fails.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Kind is a fault kind; each runs as its own phase.
type Kind string

// The fault kinds.
const (
	Crash      Kind = "crash"
	Duplicates Kind = "duplicates"
	AWSFaults  Kind = "aws"
	Slow       Kind = "slow"
	Interrupts Kind = "interrupts"
)

// Kinds lists every fault kind in the order a run takes them.
var Kinds = []Kind{Crash, Duplicates, AWSFaults, Slow, Interrupts}

// ParseKinds reads a comma-separated list of kinds ("all" for every one).
func ParseKinds(s string) ([]Kind, error) {
	if strings.TrimSpace(s) == "all" {
		return Kinds, nil
	}
	var out []Kind
	seen := map[Kind]bool{}
	for part := range strings.SplitSeq(s, ",") {
		k := Kind(strings.TrimSpace(part))
		if k == "" {
			continue
		}
		known := false
		for _, v := range Kinds {
			known = known || v == k
		}
		if !known {
			return nil, fmt.Errorf("unknown fault kind %q; want a comma-separated list of %s, or all", k, kindList())
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no fault kind given; want a comma-separated list of %s, or all", kindList())
	}
	return out, nil
}

func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// DefaultFaults is the HOOKLEDGER_FAULTS the aws phase injects.
const DefaultFaults = "dynamodb.throttle=0.05,dynamodb.500=0.03,dynamodb.timeout=0.02,dynamodb.timeout_after_write=0.03," +
	"sqs.throttle=0.02,sqs.500=0.03,sqs.timeout=0.02,sqs.timeout_after_write=0.02"

// Config is one chaos run.
type Config struct {
	// Binary is a hookledger binary; the harness runs its replay command
	// as an operator would.
	Binary string
	// Lab is a hooklab binary built with -tags crashpoints; the harness
	// runs its dev command (the pipeline with the lab's sample effect, crash
	// points and AWS fault injection) as the fleet's processes.
	Lab string
	// Endpoint is the AWS emulator's URL. It must be a loopback address.
	Endpoint string
	// Deliveries is the number of valid deliveries (duplicates included),
	// split evenly over the kinds; invalid requests come on top.
	Deliveries int
	// Kinds are the phases to run.
	Kinds []Kind
	// Payloads are the payload policies (HOOKLEDGER_PAYLOAD) every kind
	// runs under, each as its own phase (default: on-trouble, the shipped
	// default).
	Payloads []string
	// Concurrency is how many deliveries are in flight at once.
	Concurrency int
	// Workers is the number of dev processes per phase (at least 2).
	Workers int
	// Timeout bounds each phase's wait for the pipeline to settle.
	Timeout time.Duration
	// Faults is HOOKLEDGER_FAULTS for the aws phase, without a seed.
	Faults string
	// Seed makes the plan and the injected faults reproducible (0: random).
	Seed uint64
	// Parallel runs the phases at the same time, each with its own table,
	// queue and processes.
	Parallel bool
	// LogDir receives one log per phase with the dev processes' output.
	LogDir string
	// Keep leaves the phases' tables and queues in the emulator.
	Keep bool
	// Progress receives a line per step (nil: discarded).
	Progress io.Writer
}

func (c *Config) defaults() error {
	if c.Binary == "" || c.Lab == "" {
		return errors.New("no crash-point binaries: build them with `go build -tags crashpoints -o bin/proof/ ./cmd/hookledger ./lab/cmd/hooklab`")
	}
	if err := Loopback(c.Endpoint); err != nil {
		return err
	}
	if c.Deliveries <= 0 {
		c.Deliveries = 4000
	}
	if len(c.Kinds) == 0 {
		c.Kinds = Kinds
	}
	if len(c.Payloads) == 0 {
		c.Payloads = []string{"on-trouble"}
	}
	for _, pl := range c.Payloads {
		if pl != "always" && pl != "on-trouble" {
			return fmt.Errorf("payload policy %q: want always or on-trouble", pl)
		}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 16
	}
	if c.Workers < 2 {
		c.Workers = 2
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Minute
	}
	if c.Faults == "" {
		c.Faults = DefaultFaults
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.LogDir == "" {
		c.LogDir = ".chaos"
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	c.Progress = &lockedWriter{w: c.Progress} // parallel phases share it
	return nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// Loopback checks that endpoint is an emulator on this machine: the harness
// never talks to real AWS.
func Loopback(endpoint string) error {
	if endpoint == "" {
		return errors.New("no emulator endpoint: start MiniStack (make emulator) and set AWS_ENDPOINT_URL=http://localhost:4566")
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return fmt.Errorf("emulator endpoint %q is not a URL such as http://localhost:4566", endpoint)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("emulator endpoint %q is not a loopback address; the chaos harness never runs against real AWS", endpoint)
	}
	return nil
}

// awsConfig is the harness's own SDK configuration: the emulator, dummy
// credentials and no injected faults (the oracle must see the truth).
func awsConfig(ctx context.Context, endpoint string) (aws.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx,
		awsconfig.WithRegion("us-east-1"),
		awsconfig.WithBaseEndpoint(endpoint),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		awsconfig.WithRetryMaxAttempts(8),
	)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	return cfg, nil
}

// Result is what one phase did and what the oracle found.
type Result struct {
	Kind        Kind
	Payload     string // HOOKLEDGER_PAYLOAD of the phase
	Deliveries  int    // valid deliveries sent, copies included (each counted once however often the sender retried)
	Requests    int    // HTTP requests, sender retries included
	Answered5xx int    // attempts the receiver answered 5xx (the sender retried)
	NoAnswer    int    // attempts that got no answer: process crashed or restarting (the sender retried)
	Rejected    int    // invalid requests sent (each must be refused)
	Unique      int    // distinct valid events
	Accepted    int    // events answered 2xx at least once
	Poison      int    // events whose handler fails permanently (they must end dead)
	Effects     int    // charges and notifications the stub made
	Replays     int    // charge requests the payments API answered from an earlier charge (Idempotency-Key)
	DupEffects  int    // extra effects: events charged or notified more than once, counted per extra one
	Lost        int    // events answered 2xx that did not end done (or dead), or ended done without their charge or notification
	Dead        int    // events dead when the pipeline first settled (poison included)
	Replayed    int    // dead events replayed by `hookledger replay` (each must then finish)
	Late        int    // redeliveries of finished events (each must be answered duplicate and charge nothing)
	Crashes     map[string]int
	Kills       int
	Faults      map[string]int
	DLQ         int // messages in the dead-letter queue at the end
	Settle      time.Duration
	Elapsed     time.Duration
	Problems    []string
	Notes       []string // what the phase's own checks saw, for the report
}

func (r *Result) problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// OK reports whether the phase found nothing wrong.
func (r *Result) OK() bool { return len(r.Problems) == 0 && r.DupEffects == 0 && r.Lost == 0 }

// Report is a whole run.
type Report struct {
	Phases  []*Result
	Elapsed time.Duration
}

// OK reports whether every phase passed.
func (r *Report) OK() bool {
	for _, p := range r.Phases {
		if !p.OK() {
			return false
		}
	}
	return len(r.Phases) > 0
}

// Run runs the configured phases and returns what the oracle found. An
// error means the harness could not run (no emulator, no binary), not that
// the pipeline failed: for that, see Report.OK.
func Run(ctx context.Context, c Config) (*Report, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	for _, bin := range []string{c.Binary, c.Lab} {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("crash-point binary: %w", err)
		}
	}
	if err := reachable(c.Endpoint); err != nil {
		return nil, fmt.Errorf("no emulator answers at %s (%v); start MiniStack (make emulator, or lab/scripts/chaos.sh does it)", c.Endpoint, err)
	}
	if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
		return nil, err
	}
	cfg, err := awsConfig(ctx, c.Endpoint)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	type plan struct {
		kind    Kind
		payload string
	}
	var plans []plan
	for _, pl := range c.Payloads {
		for _, k := range c.Kinds {
			plans = append(plans, plan{k, pl})
		}
	}
	rep := &Report{Phases: make([]*Result, len(plans))}
	per := max(c.Deliveries/len(plans), 20)
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	for i, pn := range plans {
		k := pn.kind
		p := &phase{cfg: c, aws: cfg, kind: k, payload: pn.payload, deliveries: per, seed: c.Seed + uint64(i)*1_000_003}
		runOne := func() {
			res, err := p.run(ctx)
			rep.Phases[i] = res
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("phase %s (payload %s): %w", k, pn.payload, err)
				}
				mu.Unlock()
			}
		}
		if c.Parallel {
			wg.Go(runOne)
		} else {
			runOne()
			if ctx.Err() != nil {
				break
			}
		}
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)
	var done []*Result
	for _, p := range rep.Phases {
		if p != nil {
			done = append(done, p)
		}
	}
	rep.Phases = done
	return rep, firstErr
}

func reachable(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	conn, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		return err
	}
	return conn.Close()
}

// Print writes the run's table and verdicts.
func (r *Report) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fault kind\tpayload\tdeliveries\trejected\tunique events\teffects\tduplicate effects\tlost events\tdead events\treplayed\tcrashes\tAWS faults\tDLQ\tseconds to quiescence\t")
	var t [11]int
	for _, p := range r.Phases {
		row := [11]int{p.Deliveries, p.Rejected, p.Unique, p.Effects, p.DupEffects, p.Lost, p.Dead, p.Replayed,
			sum(p.Crashes) + p.Kills, sum(p.Faults), p.DLQ}
		fmt.Fprintf(tw, "%s\t%s\t", p.Kind, p.Payload)
		for i, v := range row {
			fmt.Fprintf(tw, "%d\t", v)
			t[i] += v
		}
		fmt.Fprintf(tw, "%.1f\t\n", p.Settle.Seconds())
	}
	fmt.Fprint(tw, "total\t\t")
	for _, v := range t {
		fmt.Fprintf(tw, "%d\t", v)
	}
	fmt.Fprint(tw, "\t\n")
	tw.Flush()
	fmt.Fprintln(w)
	for _, p := range r.Phases {
		fmt.Fprintf(w, "%s (payload %s): %d HTTP requests (%d answered 5xx, %d unanswered, all retried by the sender), %d events accepted, %d poison (must die), %d charge requests answered by Idempotency-Key, %d late redeliveries, %.1fs in all\n",
			p.Kind, p.Payload, p.Requests, p.Answered5xx, p.NoAnswer, p.Accepted, p.Poison, p.Replays, p.Late, p.Elapsed.Seconds())
		if len(p.Crashes) > 0 || p.Kills > 0 {
			fmt.Fprintf(w, "  crash points fired: %s; processes killed with SIGKILL: %d\n", counts(p.Crashes), p.Kills)
		}
		if len(p.Faults) > 0 {
			fmt.Fprintf(w, "  AWS faults injected: %s\n", counts(p.Faults))
		}
		for _, n := range p.Notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
		for _, pr := range p.Problems {
			fmt.Fprintf(w, "  PROBLEM: %s\n", pr)
		}
	}
	if r.OK() {
		fmt.Fprintf(w, "PASS: every accepted event charged and notified exactly once and finished; no duplicate effect, no lost event, no rejected request left a trace (%.0fs)\n", r.Elapsed.Seconds())
	} else {
		fmt.Fprintf(w, "FAIL: see the problems above and the logs (%.0fs)\n", r.Elapsed.Seconds())
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// faultKinds are the kinds package fault injects.
var faultKinds = map[string]bool{"throttle": true, "500": true, "timeout": true, "timeout_after_write": true}

// ValidateFaults checks a HOOKLEDGER_FAULTS value (without seed) before the
// dev processes read it, so a typo fails the run at once instead of every
// process at start.
func ValidateFaults(spec string) error {
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		svc, kind, ok2 := strings.Cut(strings.ToLower(strings.TrimSpace(name)), ".")
		var share float64
		_, err := fmt.Sscanf(strings.TrimSpace(val), "%g", &share)
		if !ok || !ok2 || svc == "" || !faultKinds[kind] || err != nil || share < 0 || share > 1 {
			return fmt.Errorf("--faults: %q: want service.kind=share with kind throttle, 500, timeout or timeout_after_write and share in 0..1 (the seed comes from --seed)", part)
		}
	}
	return nil
}
