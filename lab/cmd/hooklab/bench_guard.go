package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/testbody"
	"github.com/hookledger/hookledger/lab/bench"
	"github.com/hookledger/hookledger/lab/units"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// guard prices the replay guard (on by default where the event id is not
// covered by the signature, source.GuardByDefault; "replay_guard": false
// turns it off): one conditional put of a small item per delivery, one item
// per source, tenant, event type and body digest. It measures the
// receiver's calls, write units and time per delivery with it on and off,
// on one emulator, and what it adds per million deliveries at list prices.
func (b *benchRun) guard(ctx context.Context) error {
	env, cleanup, err := b.newEnv(ctx, "guard", "")
	if err != nil {
		return err
	}
	defer cleanup()
	m, acc, cfg, err := b.metered(ctx, env)
	if err != nil {
		return err
	}
	handler := func(guarded bool) (*receiver.Handler, error) {
		c := env.conf
		c.SourcesJSON = fmt.Sprintf(`{"github":{"provider":"github","replay_guard":%t,"tenants":{"acme":{"secrets":[%q]}}}}`, guarded, "literal:"+benchSecret)
		h, err := buildHandlers(&benchEnv{raw: env.raw, table: env.table, queueURL: env.queueURL, dlqURL: env.dlqURL, conf: c}, cfg)
		if err != nil {
			return nil, err
		}
		return h.rcv, nil
	}
	off, err := handler(false)
	if err != nil {
		return err
	}
	on, err := handler(true)
	if err != nil {
		return err
	}
	const size = 3 * 1024
	type row struct {
		calls, n int
		u        units.Usage
		dur      []time.Duration
	}
	run := func(h *receiver.Handler, req events.APIGatewayV2HTTPRequest, want receiver.Result, r *row) error {
		m.Reset()
		acc.Take()
		start := time.Now()
		resp, _ := h.Handle(ctx, req)
		r.dur = append(r.dur, time.Since(start))
		if got := receiver.Result(resp.Headers["X-Hookledger-Result"]); got != want {
			return fmt.Errorf("guard bench: receiver answered %d %s, want %s", resp.StatusCode, got, want)
		}
		r.calls += m.Service("DynamoDB") + m.Service("SQS")
		r.u = r.u.Add(acc.Take())
		r.n++
		return nil
	}
	var newOff, newOn, dupOff, dupOn, replay row
	n := b.timing
	if n < 5 {
		n = 5
	}
	for i := range n {
		for _, c := range []struct {
			h        *receiver.Handler
			new, dup *row
		}{{off, &newOff, &dupOff}, {on, &newOn, &dupOn}} {
			id := fmt.Sprintf("gh-guard-%d-%s", i, cli.RandomHex(6))
			req := githubRequest(id, testbody.JSON(id, size))
			if err := run(c.h, req, receiver.Accepted, c.new); err != nil {
				return err
			}
			if err := run(c.h, req, receiver.Duplicate, c.dup); err != nil {
				return err
			}
		}
		// A captured delivery sent again under a new delivery id: refused,
		// nothing written.
		id := fmt.Sprintf("gh-guard-r%d-%s", i, cli.RandomHex(6))
		body := testbody.JSON(id, size)
		if err := run(on, githubRequest(id, body), receiver.Accepted, &row{}); err != nil {
			return err
		}
		if err := run(on, githubRequest(id+"-forged", body), receiver.Replayed, &replay); err != nil {
			return err
		}
	}
	t := &bench.MD{Title: "Replay guard (on by default for GitHub, Shopify, GitLab, Twilio, Linear, generic id_header) per delivery, 3 KB GitHub event (measured against the emulator)",
		Header: []string{"delivery", "guard", "AWS calls", "WCU table", "WCU index", "receiver ms (median)"}}
	avg := func(r row) (float64, float64, float64) {
		return float64(r.calls) / float64(r.n), r.u.WCU / float64(r.n), r.u.IndexWCU / float64(r.n)
	}
	add := func(name, guard string, r row) {
		c, w, ix := avg(r)
		t.Add(name, guard, bench.Num(c), bench.Num(w), bench.Num(ix), bench.Num(bench.Median(bench.MS(r.dur))))
	}
	add("new event", "off", newOff)
	add("new event", "on", newOn)
	add("duplicate (still received)", "off", dupOff)
	add("duplicate (still received)", "on", dupOn)
	add("replay: same body, new event id (409)", "on", replay)
	_, wOff, _ := avg(newOff)
	_, wOn, _ := avg(newOn)
	_, dOff, _ := avg(dupOff)
	_, dOn, _ := avg(dupOn)
	extraWCU := (1-b.dupRate)*(wOn-wOff) + b.dupRate*(dOn-dOff)
	const guardItemBytes = 170 // key (source, tenant, event type, digest), event key, created_at, expires_at
	storage := (1 - b.dupRate) * 1e6 * guardItemBytes / 1e9 * ledger.DefaultRetention.Hours() / 24 / 30.4 * bench.PriceDynamoStorage.USD
	t.Notes = []string{fmt.Sprintf("With %.0f%% duplicates the guard adds %s write units per delivery: %s per million deliveries in write requests "+
		"(%s per million WRU) plus %s of storage for %.0f days of guard items, on top of the cost table. "+
		"The duplicate rows are duplicates of a record still received, which also store the payload again.",
		b.dupRate*100, bench.Num(extraWCU), usd(extraWCU*bench.PriceDynamoWrite.USD), usd(bench.PriceDynamoWrite.USD), usd(storage), ledger.DefaultRetention.Hours()/24)}
	t.Print(b.out)
	return nil
}

var githubVerifier = func() *webhook.Verifier {
	v, err := webhook.New(webhook.Config{Provider: "github"})
	if err != nil {
		panic(err)
	}
	return v
}()

// githubRequest is a signed GitHub delivery (the event id is a header the
// signature does not cover) as API Gateway hands it over.
func githubRequest(id string, body []byte) events.APIGatewayV2HTTPRequest {
	h, err := githubVerifier.Sign(webhook.Message{ID: id, Type: "push", Body: body}, benchSecret)
	if err != nil {
		panic(err)
	}
	req := events.APIGatewayV2HTTPRequest{
		RawPath: "/webhooks/github/acme", Headers: map[string]string{}, Body: string(body),
		PathParameters: map[string]string{"source": "github", "tenant": "acme"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: "hooks.example.com",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: "/webhooks/github/acme"}},
	}
	for k, vs := range h {
		req.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	return req
}

// guardDeltas is what the replay guard adds to a 3 KB delivery, for the
// bill: the same GitHub deliveries through receivers with the guard on and
// off, new and duplicate; the difference in write units, kept bytes, log
// bytes and time with AWS latencies (medians).
func (b *benchRun) guardDeltas(ctx context.Context, env *benchEnv, counted, timed aws.Config, acc *units.Accountant) (newD, dupD bench.Profile, err error) {
	var prof [2][2]bench.Profile // [guard off, on][new, duplicate]
	kinds := []receiver.Result{receiver.Accepted, receiver.Duplicate}
	for g, guarded := range []bool{false, true} {
		e := *env
		e.conf.SourcesJSON = fmt.Sprintf(`{"github":{"provider":"github","replay_guard":%t,"tenants":{"acme":{"secrets":[%q]}}}}`, guarded, "literal:"+benchSecret)
		hc, err := buildHandlers(&e, counted)
		if err != nil {
			return newD, dupD, err
		}
		ht, err := buildHandlers(&e, timed)
		if err != nil {
			return newD, dupD, err
		}
		id := "gh-bill-" + cli.RandomHex(6)
		req := githubRequest(id, testbody.JSON(id, 3<<10))
		for k, want := range kinds { // units and log bytes
			acc.Take()
			hc.logs.take()
			if resp, _ := hc.rcv.Handle(ctx, req); resp.Headers["X-Hookledger-Result"] != string(want) {
				return newD, dupD, fmt.Errorf("guard %v: receiver answered %d, want %s", guarded, resp.StatusCode, want)
			}
			u := acc.Take()
			p := &prof[g][k]
			p.WCU, p.LogBytes = u.WCU+u.IndexWCU, float64(hc.logs.take())
			for _, w := range u.Written {
				p.TableBytes += float64(w) + 100
			}
		}
		var ms [2][]float64
		for range max(5, b.billSamples/2) { // times
			id := "gh-billt-" + cli.RandomHex(6)
			req := githubRequest(id, testbody.JSON(id, 3<<10))
			for k := range kinds {
				t0 := time.Now()
				ht.rcv.Handle(ctx, req)
				ms[k] = append(ms[k], msSince(t0))
			}
		}
		ht.logs.take()
		prof[g][0].ReceiverMS, prof[g][1].ReceiverMS = bench.Median(ms[0]), bench.Median(ms[1])
	}
	delta := func(k int) bench.Profile {
		on, off := prof[1][k], prof[0][k]
		return bench.Profile{WCU: on.WCU - off.WCU, LogBytes: on.LogBytes - off.LogBytes, TableBytes: on.TableBytes - off.TableBytes, ReceiverMS: max(0, on.ReceiverMS-off.ReceiverMS)}
	}
	return delta(0), delta(1), nil
}
