package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/idempotency"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/testbody"
	"github.com/hookledger/hookledger/lab/bench"
	"github.com/hookledger/hookledger/lab/units"
)

// The idempotency package in the side-by-side comparison: the same
// stream as every other contender, the same trivial handler as the
// Powertools driver (it returns {"status":"processed","event_id":id}), the
// key selected by a JSON path ("id") from the event as it arrives
// (json.RawMessage: the Lambda runtime's bytes, not re-encoded).

const idemContender = "hookledger idempotency"

const idemCompareNote = "hookledger idempotency: package idempotency wrapping the same trivial handler as the Powertools driver (claim, run, store the response; a repeat replays it), " +
	"with the key taken by the JSON path \"id\" from the event's bytes; like Powertools it stores the response, not the payload."

type benchResponse = map[string]string

func benchHandler(_ context.Context, ev json.RawMessage) (benchResponse, error) {
	var e struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(ev, &e); err != nil {
		return nil, err
	}
	return benchResponse{"status": "processed", "event_id": e.ID}, nil
}

func idemFunc(cfg aws.Config, table string, cache int) (*idempotency.Func[json.RawMessage, benchResponse], error) {
	s, err := idempotency.NewStore(dynamodb.NewFromConfig(cfg), idempotency.Options{Table: table, CacheEntries: cache, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	return idempotency.Wrap(s, "bench", benchHandler, idempotency.Config[json.RawMessage, benchResponse]{KeyPath: "id"})
}

// idempotencyContender runs each delivery through a wrapped handler with
// a deadline, as Lambda hands one over. metered and timed are the two
// configurations compare uses (the metered one carries API options).
func idempotencyContender(table string, metered, timed aws.Config) (contender, error) {
	fm, err := idemFunc(metered, table, 0)
	if err != nil {
		return contender{}, err
	}
	ft, err := idemFunc(timed, table, 0)
	if err != nil {
		return contender{}, err
	}
	return contender{idemContender, func(ctx context.Context, cfg aws.Config, d benchDelivery) error {
		f := ft
		if len(cfg.APIOptions) > 0 {
			f = fm
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		resp, info, err := f.Call(ctx, json.RawMessage(d.Body))
		if err != nil {
			return err
		}
		if resp["event_id"] != d.ID || info.Replayed() != d.Dup {
			return fmt.Errorf("delivery %s (dup %v): got %v, replayed %v", d.ID, d.Dup, resp, info.Replayed())
		}
		return nil
	}}, nil
}

// idempotencyTable prints the comparison from compare's results:
// per first call and per repeat, requests and write units and the latency
// each call adds (the handler itself is trivial), for this package and
// Powertools; then this package's cached repeat and a bare handler, measured
// here on the same emulator.
func (b *benchRun) idempotencyTable(ctx context.Context, table string, results map[string]*contenderResult, names []string) error {
	extra, err := b.idempotencyExtras(ctx, table)
	if err != nil {
		return err
	}
	t := &bench.MD{Title: "Idempotency for any Go handler vs Powertools for AWS Lambda (Python): per call, same stream, same emulator",
		Header: []string{"contender", "payload", "call", "requests", "WCU", "RCU", "samples", "p50 ms", "p90 ms"}}
	for _, name := range names {
		if name != idemContender && !isPowertools(name) {
			continue
		}
		r := results[name]
		for _, size := range testbody.Sizes {
			for _, dup := range []bool{false, true} {
				k := kindKey(size, dup)
				if r.n[k] == 0 {
					continue
				}
				kind := "first call"
				if dup {
					kind = "repeat"
				}
				n := float64(r.n[k])
				t.Add(name, testbody.Label(size), kind, r.calls[k]/n, r.wcu[k]/n, r.rcu[k]/n, len(r.ms[k]), bench.Median(r.ms[k]), bench.Percentile(r.ms[k], 90))
			}
		}
	}
	for _, size := range testbody.Sizes {
		e := extra[size]
		t.Add(idemContender+", local cache", testbody.Label(size), "repeat", e.cachedCalls, e.cachedWCU, 0.0, len(e.cached), bench.Median(e.cached), bench.Percentile(e.cached, 90))
		t.Add("bare handler (no idempotency)", testbody.Label(size), "any", 0.0, 0.0, 0.0, len(e.bare), bench.Median(e.bare), bench.Percentile(e.bare, 90))
	}
	t.Notes = []string{
		"Requests and write units measured per call against the emulator and priced by one implementation of DynamoDB's billing rules (lab/units) for both contenders. " +
			"A first call is a conditional PutItem (claim) and an UpdateItem (store the result); a repeat is one failed conditional PutItem that returns the stored result (ReturnValuesOnConditionCheckFailure), billed on the stored item.",
		"Added latency is the whole wrapped call's wall time with a handler that does nothing: Go SDK v2 for this package, boto3 in CPython for Powertools, each against the same emulator on a shared 2-core machine (language and SDK overheads included). " +
			"The Go side takes the event as json.RawMessage and selects the key with the JSON path \"id\"; Powertools gets the parsed dict and event_key_jmespath \"id\".",
		"Local cache: Options.CacheEntries (Powertools has use_local_cache, off by default in both).",
		"The p50 and p90 here are from one pass (samples: how many); the comparison below repeats it until the ratio holds still, or says it did not.",
	}
	t.Print(b.out)
	return b.idempotencyLatency(ctx, table)
}

func isPowertools(name string) bool { return len(name) > 10 && name[:10] == "Powertools" }

type idemExtra struct {
	cached, bare           []float64
	cachedCalls, cachedWCU float64
}

// idempotencyExtras measures what compare's stream does not: a repeat
// served from the local cache, and the bare handler.
func (b *benchRun) idempotencyExtras(ctx context.Context, table string) (map[int]idemExtra, error) {
	raw, err := b.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	m := awstest.NewMeter()
	acc := &units.Accountant{Raw: dynamodb.NewFromConfig(raw), Tables: map[string]units.TableSpec{table: ledgerTable}}
	metered, err := b.awsConfig(ctx, m.APIOption, acc.APIOption)
	if err != nil {
		return nil, err
	}
	out := map[int]idemExtra{}
	for _, size := range testbody.Sizes {
		var e idemExtra
		fm, err := idemFunc(metered, table, 64)
		if err != nil {
			return nil, err
		}
		ft, err := idemFunc(raw, table, 256)
		if err != nil {
			return nil, err
		}
		// Metered: one first call, then a cached repeat.
		body := json.RawMessage(testbody.JSON(fmt.Sprintf("evt_cache_%d_%d", size, time.Now().UnixNano()), size))
		if _, _, err := fm.Call(ctx, body); err != nil {
			return nil, err
		}
		m.Reset()
		acc.Take()
		if _, info, err := fm.Call(ctx, body); err != nil || !info.FromCache {
			return nil, fmt.Errorf("cached repeat: %+v %v", info, err)
		}
		for _, v := range m.Snapshot() {
			e.cachedCalls += float64(v)
		}
		u := acc.Take()
		e.cachedWCU = u.WCU + u.IndexWCU
		// Timed: cached repeats and the bare handler, on compareN events.
		for i := 0; i < b.compareN; i++ {
			body := json.RawMessage(testbody.JSON(fmt.Sprintf("evt_cachet_%d_%d_%d", size, i, time.Now().UnixNano()), size))
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			if _, _, err := ft.Call(cctx, body); err != nil {
				cancel()
				return nil, err
			}
			t0 := time.Now()
			_, info, err := ft.Call(cctx, body)
			e.cached = append(e.cached, float64(time.Since(t0).Microseconds())/1000)
			cancel()
			if err != nil || !info.FromCache {
				return nil, fmt.Errorf("cached repeat: %+v %v", info, err)
			}
			t0 = time.Now()
			if _, err := benchHandler(ctx, body); err != nil {
				return nil, err
			}
			e.bare = append(e.bare, float64(time.Since(t0).Microseconds())/1000)
		}
		out[size] = e
	}
	return out, nil
}

// Rounds of the latency comparison: at least idemMinRounds, until the ratio
// of the medians is stable over the last idemMinRounds (their spread at most
// idemStable of their median), at most idemMaxRounds.
const (
	idemMinRounds = 3
	idemMaxRounds = 8
	idemStable    = 0.2
)

// idempotencyLatency compares the time each call takes, this package's
// against Powertools', for 1 KB events, in rounds of compare's stream (the
// two interleaved, so that a busy neighbour slows both), until the ratio of
// their medians holds still; it prints the samples, their spread and the
// ratio, or says that no ratio is stable enough to print.
func (b *benchRun) idempotencyLatency(ctx context.Context, table string) error {
	if b.python == "" {
		return nil
	}
	if _, err := os.Stat(b.python); err != nil {
		fmt.Fprintf(b.out, "\nLatency, this package against Powertools: not measured (%s missing).\n", b.python)
		return nil
	}
	raw, err := b.awsConfig(ctx)
	if err != nil {
		return err
	}
	f, err := idemFunc(raw, table, 0)
	if err != nil {
		return err
	}
	type series struct{ first, repeat []float64 }
	var goS, ptS series
	var goRounds, ptRounds, ratios []float64
	rounds := 0
	stable := false
	for rounds < idemMaxRounds && !stable && ctx.Err() == nil {
		rounds++
		var stream []benchDelivery
		for _, d := range compareStream(b.compareN, b.dupRate, fmt.Sprintf("lr%d_%s", rounds, cli.RandomHex(4))) {
			if d.Size == testbody.Sizes[0] {
				stream = append(stream, d)
			}
		}
		var goFirst []float64
		for _, d := range stream {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			t0 := time.Now()
			_, _, err := f.Call(cctx, json.RawMessage(d.Body))
			ms := msSince(t0)
			cancel()
			if err != nil {
				return err
			}
			if d.Dup {
				goS.repeat = append(goS.repeat, ms)
			} else {
				goS.first = append(goS.first, ms)
				goFirst = append(goFirst, ms)
			}
		}
		pt, err := b.powertoolsTiming(ctx, stream)
		if err != nil {
			fmt.Fprintf(b.out, "\nLatency, this package against Powertools: not measured (%v).\n", err)
			return nil
		}
		var ptFirst []float64
		for _, t := range pt.Timing {
			if t.Dup {
				ptS.repeat = append(ptS.repeat, t.MS)
			} else {
				ptS.first = append(ptS.first, t.MS)
				ptFirst = append(ptFirst, t.MS)
			}
		}
		g, p := bench.Median(goFirst), bench.Median(ptFirst)
		goRounds, ptRounds, ratios = append(goRounds, g), append(ptRounds, p), append(ratios, p/g)
		if len(ratios) >= idemMinRounds {
			last := ratios[len(ratios)-idemMinRounds:]
			lo, hi := slices.Min(last), slices.Max(last)
			stable = (hi-lo)/bench.Median(last) <= idemStable
		}
	}
	t := &bench.MD{Title: fmt.Sprintf("Latency per call, this package against Powertools (1 KB, %d rounds of compare's stream, interleaved)", rounds),
		Header: []string{"contender", "call", "samples", "p50 ms", "p25–p75 ms", "round medians (first calls) ms"}}
	rows := func(name string, s series, rm []float64) {
		t.Add(name, "first call", len(s.first), bench.Median(s.first), fmt.Sprintf("%.2f–%.2f", bench.Percentile(s.first, 25), bench.Percentile(s.first, 75)), joinFloats(rm))
		t.Add(name, "repeat", len(s.repeat), bench.Median(s.repeat), fmt.Sprintf("%.2f–%.2f", bench.Percentile(s.repeat, 25), bench.Percentile(s.repeat, 75)), "")
	}
	rows(idemContender, goS, goRounds)
	rows("Powertools idempotency", ptS, ptRounds)
	lo, hi := slices.Min(ratios), slices.Max(ratios)
	if stable {
		last := ratios[len(ratios)-idemMinRounds:]
		t.Notes = []string{fmt.Sprintf("Powertools' first call over this package's: %.1f× (the median of the last %d rounds' ratios, %.1f–%.1f×; all rounds %.1f–%.1f×): stable to %.0f%% over %d rounds.",
			bench.Median(last), idemMinRounds, slices.Min(last), slices.Max(last), lo, hi, idemStable*100, idemMinRounds)}
	} else {
		t.Notes = []string{fmt.Sprintf("No ratio printed: the rounds' ratios of the medians moved from %.1f× to %.1f× and did not hold within %.0f%% over %d rounds in %d (a busy machine: the wall times of both include every other process's share of its 2 cores).",
			lo, hi, idemStable*100, idemMinRounds, rounds)}
	}
	t.Notes = append(t.Notes, "Wall time per call from the client: Go SDK v2 for this package, boto3 in CPython for Powertools (each language's and SDK's own overhead included), against the same emulator.")
	t.Print(b.out)
	return nil
}

// powertoolsTiming runs the Powertools driver over stream, timing only.
func (b *benchRun) powertoolsTiming(ctx context.Context, stream []benchDelivery) (ptOutput, error) {
	var res ptOutput
	dir, err := os.MkdirTemp("", "hookledger-bench-ptl")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	sb, _ := json.Marshal(map[string][]benchDelivery{"accounting": {}, "timing": stream})
	in, out := filepath.Join(dir, "stream.json"), filepath.Join(dir, "out.json")
	if err := os.WriteFile(in, sb, 0o600); err != nil {
		return res, err
	}
	cmd := exec.CommandContext(ctx, b.python, b.ptScript, "--endpoint", b.ep, "--stream", in, "--out", out)
	cmd.Stderr = b.log
	if err := cmd.Run(); err != nil {
		return res, fmt.Errorf("%s: %w", b.ptScript, err)
	}
	ob, err := os.ReadFile(out)
	if err != nil {
		return res, err
	}
	return res, json.Unmarshal(ob, &res)
}

func joinFloats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, ", ")
}
