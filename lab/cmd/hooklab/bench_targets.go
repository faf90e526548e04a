package main

import (
	"fmt"
	"time"

	"github.com/hookledger/hookledger/lab/bench"
)

// The cost section's last tables: what else the bill charges, the levers,
// and the targets in the form a script checks.

// size is the measured delivery of label.
func (bm *billMeasures) size(label string) billSize {
	for _, s := range bm.sizes {
		if s.label == label {
			return s
		}
	}
	panic("no bill size " + label)
}

// printExtras prices what a stream of new events and duplicates of
// processed ones leaves out: a duplicate that finds its record still
// received, the replay guard, and the empty receives of a quiet queue.
func (b *benchRun) printExtras(st bench.Stack, bm *billMeasures) {
	a, _ := b.assume(st, bm, targetRate, windowAt(targetRate, st), false)
	au := a
	au.FunctionURL = true
	nw, dp := bm.profiles("3 KB", 1)
	recv := bm.size("3 KB").dupRecv
	perDup := bench.Cost(nw, recv, 1, a).Total() - bench.Cost(nw, dp, 1, a).Total()
	gn, gd := guarded(nw, bm.guardNew), guarded(dp, bm.guardDup)
	guardH := bench.Cost(gn, gd, b.dupRate, a).Total()
	guardU := bench.Cost(gn, gd, b.dupRate, au).Total()
	base := bench.Cost(nw, dp, b.dupRate, a).Total()
	_, _, _, _, empties := b.allIn(st, bm, 1e6, b.dupRate, "HTTP API")
	delay := func(rate float64, w time.Duration) string {
		if r, ok := b.esm[esmKey{rate, w}]; ok {
			return fmt.Sprintf("p99 %s s at %g events/s with window %d s", secs(bench.Percentile(r.Delays, 99)), rate, int(w/time.Second))
		}
		return fmt.Sprintf("p99 %s s at %g events/s with window %d s (model)", secs(esmModel(rate, w, st).P99), rate, int(w/time.Second))
	}
	t := &bench.MD{Title: fmt.Sprintf("What else the bill charges (3 KB, %.0f%% duplicates, 10 events/s on the queue unless said)", b.dupRate*100),
		Header: []string{"item", "when", "adds", "per"}}
	t.Add("a duplicate that finds its record still received", "it arrives before the processor took its first delivery: within the handler start delay ("+delay(0.3, st.BatchWindow)+"; "+delay(targetRate, windowAt(targetRate, st))+")",
		usd(perDup), fmt.Sprintf("million such duplicates, over one of a processed event: %s WCU more and its payload kept (%.0f B)", bench.Num(recv.WCU-dp.WCU), recv.TableBytes))
	t.Add("the replay guard", "on by default for GitHub, Shopify, GitLab, Twilio, Linear, generic with id_header, any source with key_header (docs/providers.md)",
		usd(guardH-base), fmt.Sprintf("million deliveries: %s WCU a new event, %s a duplicate, %.1f ms more; such a source's 3 KB delivery costs %s behind the HTTP API, %s behind the function URL",
			bench.Num(bm.guardNew.WCU), bench.Num(bm.guardDup.WCU), bm.guardNew.ReceiverMS, usd(guardH), usd(guardU)))
	t.Add("empty receives", "a poller's 20 s long poll runs out before a message reaches it: common below about 3 events/s",
		usd(empties*bench.PriceSQS.USD/1e6), fmt.Sprintf("month at 1M deliveries (%.0fk requests; in the all-in bill)", empties/1e3))
	t.Print(b.out)
}

// guarded is p with the replay guard's additions.
func guarded(p, d bench.Profile) bench.Profile {
	p.WCU += d.WCU
	p.LogBytes += d.LogBytes
	p.TableBytes += d.TableBytes
	p.ReceiverMS += d.ReceiverMS
	return p
}

func (b *benchRun) printLevers(st bench.Stack, bm *billMeasures) {
	w := windowAt(targetRate, st)
	base, a := b.variable(st, bm, "3 KB", b.dupRate, 1, targetRate, false)
	nw, dp := bm.profiles("3 KB", 1)
	lv := &bench.MD{Title: fmt.Sprintf("Levers on the variable cost (3 KB, %.0f%% duplicates, HTTP API, 10 events/s on the queue, window %d s: %s per million deliveries)", b.dupRate*100, int(w/time.Second), usd(base.Total())),
		Header: []string{"lever", "per million deliveries", "saving", "what it costs you"}}
	add := func(name, cost string, n, d bench.Profile, aa bench.Assumptions) {
		c := bench.Cost(n, d, b.dupRate, aa)
		lv.Add(name, usd(c.Total()), usd(base.Total()-c.Total()), cost)
	}
	{ // LOG_LEVEL=warn: no info line per event and per duplicate; the metric lines stay
		n, d := nw, dp
		n.LogBytes, d.LogBytes = 0, 0
		add("LOG_LEVEL=warn (PipelineSettings)", "no info line per processed event and per duplicate (warnings, errors and metric lines stay)", n, d, a)
	}
	{
		aa := a
		aa.AccessLogBytes = 0
		add("no HTTP API access log", "the record of requests API Gateway answered itself (throttles, 4xx)", nw, dp, aa)
	}
	{
		aa := a
		aa.MemoryMB = 2 * st.MemoryMB
		add(fmt.Sprintf("receiver at %d MB instead of %d", aa.MemoryMB, st.MemoryMB), "none but the cost: twice the CPU for the same wait on AWS", nw, dp, aa)
	}
	{
		aa := a
		aa.ProcessorMB = st.MemoryMB
		add(fmt.Sprintf("processor at %d MB instead of %d", st.MemoryMB, st.ProcessorMB), fmt.Sprintf("half the CPU: a batch's CPU-bound time doubles, and so does what %d processors need for a peak (performance.md, Limits)", st.Concurrency), nw, dp, aa)
	}
	{
		aa := a
		aa.FunctionURL = true
		add("function URL instead of the HTTP API", "API Gateway's throttling; custom domains need CloudFront (docs/deploy.md, \"The front door\")", nw, dp, aa)
	}
	for _, alt := range []time.Duration{0, time.Second, 2 * time.Second, 5 * time.Second} {
		if alt == w {
			continue
		}
		aa, _ := b.assume(st, bm, targetRate, alt, false)
		delay := "not measured"
		if res, ok := b.esm[esmKey{targetRate, alt}]; ok {
			delay = fmt.Sprintf("handler start delay p50 %s s, p99 %s s (measured)", secs(bench.Percentile(res.Delays, 50)), secs(bench.Percentile(res.Delays, 99)))
		}
		add(fmt.Sprintf("BatchWindowSeconds %d instead of %d", int(alt/time.Second), int(w/time.Second)), delay, nw, dp, aa)
	}
	// What the template already does, undone, for scale.
	{
		aa := a
		aa.PlatformLogBytes = platformLogBytes
		add("(already done) keeping Lambda's START/END/REPORT lines", "—", nw, dp, aa)
	}
	{
		n := nw
		n.WCU++
		add("(already done) removing the due-index entry at Complete", "—", n, dp, a)
	}
	lv.Notes = []string{"Each lever alone, the rest as priced. Negative savings are what the template saves already. Read-before-write for duplicate-heavy sources (an eventually consistent read before the conditional put) would save a write unit per duplicate for half a read unit per delivery and a round trip on every new event: not done (the new-event path stays at two round trips)."}
	lv.Print(b.out)
}

// The targets: variable at 10 events/s, all-in at 1M deliveries a month,
// idle, and the handler start delay at 0.3 events/s.
const (
	targetVariableHTTP = 4.10
	targetVariableURL  = 3.03
	targetAllInHTTP    = 5.35
	targetAllInURL     = 4.37
	targetIdle         = 1.50
	targetDelayRate    = 0.3
	targetDelayP50     = 2.0 // seconds
)

func (b *benchRun) printTargets(st bench.Stack, bm *billMeasures) {
	const dup = 0.3
	h, _ := b.variable(st, bm, "3 KB", dup, 1, targetRate, false)
	u, _ := b.variable(st, bm, "3 KB", dup, 1, targetRate, true)
	ah, _, _, _, _ := b.allIn(st, bm, 1e6, dup, "HTTP API")
	au, _, _, _, _ := b.allIn(st, bm, 1e6, dup, "function URL")
	got := [5]float64{h.Total(), u.Total(), ah, au, bench.BillTotal(b.fixedBill(st, bm, "HTTP API"))}
	verdict := func(got, target float64) string {
		if got > target {
			return "NOT met"
		}
		return "met"
	}
	targets := [5]float64{targetVariableHTTP, targetVariableURL, targetAllInHTTP, targetAllInURL, targetIdle}
	busy := fmt.Sprintf("BatchWindowSeconds %d (performance.md's setting from %g events/s), the rest as shipped", int(windowAt(targetRate, st)/time.Second), busyRate)
	what := [5]string{
		"variable cost per million deliveries, 3 KB, 30% duplicates, 10 events/s on the queue, " + busy + ", HTTP API",
		"the same through the function URL",
		"all-in per million deliveries at 1M deliveries a month, 3 KB, 30% duplicates, shipped defaults, HTTP API",
		"the same through the function URL",
		"fixed cost per month of an idle deployment, shipped defaults",
	}
	fmt.Fprintln(b.out)
	for i := range got {
		fmt.Fprintf(b.out, "Target: %s: $%.2f (target $%.2f): %s\n", what[i], got[i], targets[i], verdict(got[i], targets[i]))
	}
	p50, src := esmModel(targetDelayRate, st.BatchWindow, st).P50, " (model: the batching section did not run)"
	if r, ok := b.esm[esmKey{targetDelayRate, st.BatchWindow}]; ok {
		p50, src = bench.Percentile(r.Delays, 50), ""
	}
	fmt.Fprintf(b.out, "Target: handler start delay p50 at %g events/s on the queue, shipped defaults%s: %.2f s (target %.2f s): %s\n",
		targetDelayRate, src, p50/1000, targetDelayP50, verdict(p50/1000, targetDelayP50))
}
