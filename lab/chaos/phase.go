package chaos

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/lab/paystub"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// tuning is what makes one phase's faults.
type tuning struct {
	visibility int           // queue visibility timeout, seconds
	fnTimeout  time.Duration // processor batch deadline (the lease is this plus 5s)
	dupShare   float64       // share of events delivered again (1-2 extra copies)
	laterShare float64       // share of extra copies held back to a second wave
	burstEvery int           // one 50-way concurrent burst per this many deliveries
	crash      bool
	faults     bool
	slowShare  float64 // share of charges the payments API is slow on
	slowMin    time.Duration
	slowMax    time.Duration
}

func tune(k Kind) tuning {
	base := tuning{visibility: 10, fnTimeout: 3 * time.Second, dupShare: 0.1, laterShare: 0.1, burstEvery: 1000}
	switch k {
	case Crash:
		// Long enough that a crashed worker's message stays hidden past
		// its lease: the reclaimer resets or resolves it first, so
		// reclaimer.after_reset gets its chance too.
		base.visibility = 30
		base.crash = true
	case Duplicates:
		base.dupShare, base.laterShare, base.burstEvery = 0.3, 0.4, 250
	case AWSFaults:
		base.faults = true
	case Slow:
		// The lease is 9s; SQS shows the message again after 2s, while
		// the first worker is still waiting on the slow payments API.
		base.visibility, base.fnTimeout = 2, 4*time.Second
		base.slowShare, base.slowMin, base.slowMax = 0.3, time.Second, 6*time.Second
	}
	return base
}

type eventKind int

const (
	invoice eventKind = iota // charges once
	poison                   // its handler fails permanently: must end dead, never charged
	push                     // a GitHub push with no effect
)

// event is one valid webhook event the harness sends.
type event struct {
	id       ledger.Key
	kind     eventKind
	req      request
	accepted atomic.Bool
}

// job is one delivery (conc copies at once) of an event, or an invalid
// request.
type job struct {
	ev   *event
	bad  *badCase
	id   string // the invalid request's marker id
	conc int
}

type phase struct {
	cfg        Config
	aws        aws.Config
	kind       Kind
	payload    string // HOOKLEDGER_PAYLOAD
	deliveries int
	seed       uint64

	t      tuning
	res    *Result
	rng    *mrand.Rand
	name   string
	db     *dynamodb.Client
	sq     *sqs.Client
	l      *ledger.Ledger
	qurl   string
	dlq    string
	stub   *paystub.Server
	sign   signers
	events []*event
	byID   map[ledger.Key]*event
	fleet  *fleet
	snd    *sender
	logf   *os.File
	env    []string

	onTeardown []func()
	targets    *targets // the interrupts phase's repeatedly killed events (nil in other phases)

	mu         sync.Mutex
	badMiss    map[string][]int // case -> wrong statuses seen
	refused    map[string]int   // valid deliveries answered 4xx, by status and result
	unanswered int
}

func (p *phase) progress(format string, args ...any) {
	fmt.Fprintf(p.cfg.Progress, "chaos %-10s %-10s "+format+"\n", append([]any{p.kind, p.payload}, args...)...)
}

func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

// run runs the phase from setup to verdict. The Result is always
// returned, with what was found so far when err is not nil.
func (p *phase) run(ctx context.Context) (*Result, error) {
	start := time.Now()
	p.res = &Result{Kind: p.kind, Payload: p.payload}
	defer func() { p.res.Elapsed = time.Since(start) }()
	p.t = tune(p.kind)
	p.rng = mrand.New(mrand.NewPCG(p.seed, 0x6368616f73))
	p.byID = map[ledger.Key]*event{}
	p.badMiss, p.refused = map[string][]int{}, map[string]int{}
	if err := p.setup(ctx); err != nil {
		p.teardown()
		return p.res, err
	}
	defer p.teardown()
	first, later := p.plan()
	if p.kind == Interrupts {
		p.pickTargets()
	}
	p.res.Unique = len(p.events)
	p.progress("%d deliveries of %d events, %d invalid requests, %d dev processes", p.res.Deliveries, p.res.Unique, p.res.Rejected, len(p.fleet.workers))

	sendCtx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	p.send(sendCtx, first)
	p.send(sendCtx, later) // out of order: copies of events long since done
	cancel()
	p.fleet.stopRotating()
	p.res.Requests = int(p.snd.requests.Load())
	p.res.Answered5xx, p.res.NoAnswer = int(p.snd.answered5xx.Load()), int(p.snd.connFailed.Load())
	p.progress("sent (%d HTTP requests); waiting for the pipeline to settle", p.res.Requests)

	settleStart := time.Now()
	recs, err := p.settle(ctx, p.cfg.Timeout)
	p.res.Settle = time.Since(settleStart)
	if err != nil {
		p.res.problem("%v", err)
	} else {
		p.progress("settled in %.1fs", p.res.Settle.Seconds())
	}
	for _, r := range recs {
		if r.Status == ledger.Dead {
			p.res.Dead++
		}
	}
	p.checkTargets(recs) // before the replay could revive a target that died
	if err == nil {
		p.late(ctx)
		if p.res.Dead > 0 {
			if recs, err = p.replayDead(ctx, recs); err != nil {
				p.res.problem("%v", err)
			}
		}
	}
	p.fleet.stop()
	p.verdict(ctx, recs)
	return p.res, nil
}

func (p *phase) setup(ctx context.Context) error {
	p.name = fmt.Sprintf("chaos-%s-%s", p.kind, randomHex(8))
	p.db, p.sq = dynamodb.NewFromConfig(p.aws), sqs.NewFromConfig(p.aws)
	if err := ledger.CreateTable(ctx, p.db, p.name); err != nil {
		return err
	}
	var err error
	p.qurl, p.dlq, err = queue.CreateQueues(ctx, p.sq, queue.QueueSpec{Name: p.name, VisibilityTimeout: p.t.visibility, MaxReceiveCount: 20})
	if err != nil {
		return err
	}
	if p.l, err = ledger.New(p.db, ledger.Options{Table: p.name}); err != nil {
		return err
	}

	p.stub = paystub.New()
	var payments http.Handler = p.stub
	if p.t.slowShare > 0 {
		payments = &slowPayments{next: p.stub, share: p.t.slowShare, min: p.t.slowMin, max: p.t.slowMax, rng: mrand.New(mrand.NewPCG(p.seed, 7))}
	}
	payLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	paySrv := &http.Server{Handler: payments, ReadHeaderTimeout: 5 * time.Second}
	go paySrv.Serve(payLn)
	p.onTeardown = append(p.onTeardown, func() { paySrv.Close() })

	p.sign = signers{acme: "whsec_chaos_acme_" + randomHex(24), globex: "whsec_chaos_globex_" + randomHex(24), ghAcme: "gh_chaos_" + randomHex(24)}
	p.sign.stripe, _ = webhook.New(webhook.Config{Provider: "stripe"})
	p.sign.github, _ = webhook.New(webhook.Config{Provider: "github"})
	sources, _ := json.Marshal(map[string]any{
		"stripe": map[string]any{"provider": "stripe", "tenants": map[string]any{
			"acme": map[string]any{"secrets": []string{"literal:" + p.sign.acme}}, "globex": map[string]any{"secrets": []string{"literal:" + p.sign.globex}}}},
		"github": map[string]any{"provider": "github", "tenants": map[string]any{"acme": map[string]any{"secrets": []string{"literal:" + p.sign.ghAcme}}}},
	})
	p.env = []string{
		"AWS_ENDPOINT_URL=" + p.cfg.Endpoint, "AWS_REGION=us-east-1",
		"HOOKLEDGER_TABLE=" + p.name, "HOOKLEDGER_QUEUE_URL=" + p.qurl,
	}
	for _, e := range os.Environ() {
		k, _, _ := strings.Cut(e, "=")
		if !strings.HasPrefix(k, "HOOKLEDGER_") && !strings.HasPrefix(k, "AWS_") && k != "PAYMENTS_URL" && k != "NOTIFY_URL" && k != "LOG_LEVEL" {
			p.env = append(p.env, e)
		}
	}
	devEnv := append(append([]string{}, p.env...),
		"HOOKLEDGER_SOURCES="+string(sources), "PAYMENTS_URL=http://"+payLn.Addr().String(), "NOTIFY_URL=http://"+payLn.Addr().String(),
		"HOOKLEDGER_RECLAIM_AFTER=5s", "HOOKLEDGER_MAX_BODY=65536", "LOG_LEVEL=warn",
		"HOOKLEDGER_PAYLOAD="+p.payload,
		// As the stack hands it to the reclaimer: the dev processes take
		// back the bodies only the DLQ holds.
		"HOOKLEDGER_DLQ_URL="+p.dlq)
	if p.t.faults {
		devEnv = append(devEnv, "HOOKLEDGER_FAULTS="+p.cfg.Faults)
	}
	if p.logf, err = os.Create(filepath.Join(p.cfg.LogDir, p.kind.String()+"-"+p.payload+".log")); err != nil {
		return err
	}
	p.fleet = &fleet{
		bin: p.cfg.Lab, env: devEnv, log: p.logf, crash: p.t.crash, seed: p.seed, maxN: max(1, p.deliveries/50),
		args: []string{"--reclaim-every", "2s", "--function-timeout", p.t.fnTimeout.String(), "--pollers", "2"},
	}
	if p.t.crash {
		p.fleet.rotate.Store(int64(8 * time.Second))
	}
	if p.kind == Interrupts {
		if err := p.listenKillers(payments, p.fleet, p.cfg.Workers); err != nil {
			return err
		}
	}
	if err := p.fleet.start(ctx, p.cfg.Workers); err != nil {
		p.fleet.stop()
		return err
	}
	p.snd = newSender(p.fleet.addrs(), p.cfg.Concurrency)
	return nil
}

// String is the kind's name.
func (k Kind) String() string { return string(k) }

func (p *phase) teardown() {
	for _, f := range p.onTeardown {
		f()
	}
	if p.logf != nil {
		p.logf.Close()
	}
	if p.cfg.Keep || p.name == "" {
		return
	}
	bg, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p.db.DeleteTable(bg, &dynamodb.DeleteTableInput{TableName: &p.name})
	if p.qurl != "" {
		p.sq.DeleteQueue(bg, &sqs.DeleteQueueInput{QueueUrl: &p.qurl})
		p.sq.DeleteQueue(bg, &sqs.DeleteQueueInput{QueueUrl: &p.dlq})
	}
}

// plan makes the phase's events and deliveries: a first wave (first
// deliveries, most duplicates, the invalid requests, the bursts), shuffled,
// and a later wave of held-back duplicates.
func (p *phase) plan() (first, later []job) {
	run := randomHex(6)
	valid := 0
	// 50-way concurrent bursts, smaller in runs too short to afford them.
	burst := min(50, max(2, p.deliveries/5))
	for i := 0; valid < p.deliveries; i++ {
		ev := &event{kind: invoice}
		switch r := p.rng.Float64(); {
		case i == 1 || i > 2 && r < 0.01:
			ev.kind = poison
		case i == 2 || i > 2 && r < 0.05:
			ev.kind = push
		}
		switch ev.kind {
		case push:
			key := fmt.Sprintf("gh-%s-%s-%05d", p.kind, run, i)
			body := fmt.Appendf(nil, `{"ref":"refs/heads/main","after":"%s"}`, randomHex(40))
			ev.id = ledger.Key{Source: "github", Tenant: "acme", ID: key}
			ev.req = request{method: http.MethodPost, path: "/webhooks/github/acme", body: body, header: p.sign.githubHeader(key, body, p.sign.ghAcme)}
		default:
			key := fmt.Sprintf("evt_%s_%s_%05d", p.kind, run, i)
			tenant, secret := "acme", p.sign.acme
			if i%5 == 4 {
				tenant, secret = "globex", p.sign.globex
			}
			amount := 1000 + i
			if ev.kind == poison {
				amount = 0
			}
			body := invoiceBody(key, amount)
			ev.id = ledger.Key{Source: "stripe", Tenant: tenant, ID: key}
			ev.req = request{method: http.MethodPost, path: "/webhooks/stripe/" + tenant, body: body, header: p.sign.stripeHeader(body, secret, 0)}
		}
		if ev.kind == poison {
			p.res.Poison++
		}
		p.events = append(p.events, ev)
		p.byID[ev.id] = ev
		first = append(first, job{ev: ev, conc: 1})
		valid++
		if p.rng.Float64() < p.t.dupShare {
			for range 1 + p.rng.IntN(2) {
				if p.rng.Float64() < p.t.laterShare {
					later = append(later, job{ev: ev, conc: 1})
				} else {
					first = append(first, job{ev: ev, conc: 1})
				}
				valid++
			}
		}
		if i == 3 || i > 3 && valid/p.t.burstEvery != (valid-1)/p.t.burstEvery {
			first = append(first, job{ev: ev, conc: burst})
			valid += burst
		}
	}
	p.res.Deliveries = valid
	for i := range badCases {
		first = append(first, job{bad: &badCases[i], id: fmt.Sprintf("evt_bad_%s_%s_%d", p.kind, run, i)})
	}
	var sprinkled []*badCase
	for i := range badCases {
		if !badCases[i].once {
			sprinkled = append(sprinkled, &badCases[i])
		}
	}
	for n := range p.deliveries / 50 {
		first = append(first, job{bad: sprinkled[p.rng.IntN(len(sprinkled))], id: fmt.Sprintf("evt_bad_%s_%s_s%d", p.kind, run, n)})
	}
	p.res.Rejected = len(badCases) + p.deliveries/50
	p.rng.Shuffle(len(first), func(i, j int) { first[i], first[j] = first[j], first[i] })
	p.rng.Shuffle(len(later), func(i, j int) { later[i], later[j] = later[j], later[i] })
	return first, later
}

// send delivers jobs with cfg.Concurrency deliveries in flight.
func (p *phase) send(ctx context.Context, jobs []job) {
	work := make(chan job)
	var wg sync.WaitGroup
	for range p.cfg.Concurrency {
		wg.Go(func() {
			for j := range work {
				p.do(ctx, j)
			}
		})
	}
	for _, j := range jobs {
		select {
		case work <- j:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
}

func (p *phase) do(ctx context.Context, j job) {
	if j.bad != nil {
		a := p.snd.deliver(ctx, j.bad.build(p.sign, j.id))
		if a.status != j.bad.want {
			p.mu.Lock()
			p.badMiss[j.bad.name] = append(p.badMiss[j.bad.name], a.status)
			p.mu.Unlock()
		}
		return
	}
	var wg sync.WaitGroup
	for range j.conc {
		wg.Go(func() {
			a := p.snd.deliver(ctx, j.ev.req)
			p.record(j.ev, a)
		})
	}
	wg.Wait()
}

func (p *phase) record(ev *event, a answer) {
	switch {
	case a.status >= 200 && a.status < 300:
		ev.accepted.Store(true)
	case a.status == 0 || a.status >= 500:
		p.mu.Lock()
		p.unanswered++
		p.mu.Unlock()
	default:
		p.mu.Lock()
		p.refused[fmt.Sprintf("%d %s", a.status, a.result)]++
		p.mu.Unlock()
	}
}

// settle waits until every record is done or dead and every accepted event
// has one; it returns the records by identity.
func (p *phase) settle(ctx context.Context, timeout time.Duration) (map[ledger.Key]ledger.Record, error) {
	deadline := time.Now().Add(timeout)
	var last map[ledger.Status]int
	for {
		recs, err := p.records(ctx)
		if err == nil {
			last = map[ledger.Status]int{}
			settled := true
			for _, r := range recs {
				last[r.Status]++
				settled = settled && r.Status.Terminal()
			}
			for _, ev := range p.events {
				if _, ok := recs[ev.id]; ev.accepted.Load() && !ok {
					settled = false
				}
			}
			if settled {
				return recs, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return recs, fmt.Errorf("the pipeline did not settle within %v (ledger by status: %v); see %s", timeout, last, p.logf.Name())
		}
		time.Sleep(time.Second)
	}
}

func (p *phase) records(ctx context.Context) (map[ledger.Key]ledger.Record, error) {
	list, err := p.l.List(ctx, "", 0)
	if err != nil {
		return nil, err
	}
	out := make(map[ledger.Key]ledger.Record, len(list))
	for _, r := range list {
		out[r.Key] = r
	}
	return out, nil
}

// late redelivers some finished events, as providers do after a lost answer:
// each must be answered duplicate and charge nothing.
func (p *phase) late(ctx context.Context) {
	var picks []*event
	for _, ev := range p.events {
		if ev.accepted.Load() && p.rng.Float64() < 0.03 || len(picks) < 3 && ev.accepted.Load() {
			picks = append(picks, ev)
		}
	}
	before := p.stub.Stats()
	var wg sync.WaitGroup
	var wrong atomic.Int32
	sem := make(chan struct{}, p.cfg.Concurrency)
	for _, ev := range picks {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if a := p.snd.deliver(ctx, ev.req); a.status != http.StatusOK || a.result != "duplicate" {
				wrong.Add(1)
			}
		})
	}
	wg.Wait()
	time.Sleep(2 * time.Second)
	after := p.stub.Stats()
	p.res.Late = len(picks)
	if n := wrong.Load(); n > 0 {
		p.res.problem("%d of %d late redeliveries of finished events were not answered 200 duplicate", n, len(picks))
	}
	if after.Charges != before.Charges || after.Requests != before.Requests {
		p.res.problem("late redeliveries of finished events caused %d charge requests", after.Requests-before.Requests)
	}
}

// replayDead runs `hookledger replay --status dead`, as an operator would,
// and waits for the replayed events to finish again.
func (p *phase) replayDead(ctx context.Context, recs map[ledger.Key]ledger.Record) (map[ledger.Key]ledger.Record, error) {
	for id, r := range recs {
		if r.Status == ledger.Dead && strings.TrimSpace(r.LastError) == "" {
			p.res.problem("%s is dead with no last_error to explain it", id)
		}
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, p.cfg.Binary, "replay", "--status", "dead")
	cmd.Env, cmd.Stdout, cmd.Stderr = p.env, &out, &out
	err := cmd.Run()
	fmt.Fprintf(p.logf, "[replay] %s", out.String())
	if err != nil {
		return recs, fmt.Errorf("hookledger replay --status dead failed (%v): %s", err, lastLine(out.String()))
	}
	p.res.Replayed = p.res.Dead
	p.progress("replayed %d dead events", p.res.Dead)
	return p.settle(ctx, p.cfg.Timeout)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// verdict compares what the harness sent and saw answered with the
// payments API's charges, the ledger and what is left on the queues.
func (p *phase) verdict(ctx context.Context, recs map[ledger.Key]ledger.Record) {
	r := p.res
	stats := p.stub.Stats()
	r.Effects, r.Replays = stats.Charges+stats.Notifications, stats.Replays
	keys := map[string]*event{}
	for _, ev := range p.events {
		keys[ev.id.ID] = ev
		if ev.accepted.Load() {
			r.Accepted++
		}
	}
	for key, n := range stats.PerEvent {
		if keys[key] == nil {
			r.problem("%d charges for %q, an event nobody sent", n, key)
		}
	}
	for key, n := range stats.NotifiedEvents {
		if keys[key] == nil {
			r.problem("%d notifications for %q, an event nobody sent", n, key)
		}
	}
	var lost, wrongEnd []string
	for _, ev := range p.events {
		n := stats.PerEvent[ev.id.ID]
		if n > 1 {
			r.DupEffects += n - 1
			r.problem("%s charged %d times", ev.id, n)
		}
		notes := stats.NotifiedEvents[ev.id.ID]
		if notes > 1 {
			r.DupEffects += notes - 1
			r.problem("%s notified %d times (the notify step is at-most-once)", ev.id, notes)
		}
		rec, ok := recs[ev.id]
		accepted := ev.accepted.Load()
		switch {
		case !ok && accepted:
			lost = append(lost, fmt.Sprintf("%s (accepted, no record)", ev.id))
			continue
		case !ok:
			continue
		case accepted && !rec.Status.Terminal():
			lost = append(lost, fmt.Sprintf("%s (accepted, still %s)", ev.id, rec.Status))
			continue
		}
		switch ev.kind {
		case invoice:
			if rec.Status == ledger.Done && n == 0 {
				lost = append(lost, fmt.Sprintf("%s (done, never charged)", ev.id))
			}
			if rec.Status == ledger.Done && notes == 0 {
				lost = append(lost, fmt.Sprintf("%s (done, never notified)", ev.id))
			}
			if rec.Status == ledger.Dead {
				wrongEnd = append(wrongEnd, fmt.Sprintf("%s dead after replay: %s", ev.id, rec.LastError))
			}
		case poison:
			if rec.Status != ledger.Dead || n != 0 || notes != 0 || rec.LastError == "" {
				wrongEnd = append(wrongEnd, fmt.Sprintf("%s (must die, uncharged, explained) ended %s with %d charges, last error %q", ev.id, rec.Status, n, rec.LastError))
			}
		case push:
			if rec.Status != ledger.Done || n != 0 || notes != 0 {
				wrongEnd = append(wrongEnd, fmt.Sprintf("%s (no effect) ended %s with %d charges", ev.id, rec.Status, n))
			}
		}
	}
	r.Lost = len(lost)
	for i, s := range lost {
		if i == 10 {
			r.problem("... and %d more lost events", len(lost)-10)
			break
		}
		r.problem("lost: %s", s)
	}
	for _, s := range wrongEnd {
		r.problem("%s", s)
	}
	var strays []string
	for id := range recs {
		if p.byID[id] == nil {
			strays = append(strays, id.String())
		}
	}
	sort.Strings(strays)
	if len(strays) > 0 {
		r.problem("%d ledger records for requests that were refused or never sent validly: %s", len(strays), strings.Join(strays[:min(len(strays), 5)], ", "))
	}
	p.checkQueues(ctx)
	p.mu.Lock()
	for name, got := range p.badMiss {
		want := 0
		for _, c := range badCases {
			if c.name == name {
				want = c.want
			}
		}
		r.problem("invalid request %q answered %v, want %d", name, got, want)
	}
	for k, n := range p.refused {
		r.problem("%d valid deliveries refused with %s", n, k)
	}
	if p.unanswered > 0 {
		r.problem("%d valid deliveries never answered below 500 before the phase's deadline", p.unanswered)
	}
	p.mu.Unlock()
	fired, faults, kills, unwanted := p.fleet.snapshot()
	r.Crashes, r.Faults, r.Kills = fired, faults, kills
	for _, u := range unwanted {
		r.problem("%s", u)
	}
	if p.t.crash && len(fired) == 0 {
		r.problem("no crash point fired")
	}
	if p.t.faults && len(faults) == 0 {
		r.problem("no AWS fault was injected (is the binary built with -tags crashpoints?)")
	}
}

// checkQueues drains the queue and the DLQ: every message left must be
// about an event that was validly sent.
func (p *phase) checkQueues(ctx context.Context) {
	for _, q := range []struct {
		url string
		dlq bool
	}{{p.qurl, false}, {p.dlq, true}} {
		empty := 0
		for empty < 2 && ctx.Err() == nil {
			out, err := p.sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q.url, MaxNumberOfMessages: 10, VisibilityTimeout: 120, WaitTimeSeconds: 1})
			if err != nil {
				p.res.problem("drain %s: %v", q.url, err)
				break
			}
			if len(out.Messages) == 0 {
				empty++
				continue
			}
			for _, m := range out.Messages {
				if q.dlq {
					p.res.DLQ++
				}
				msg, err := queue.Decode(aws.ToString(m.Body))
				if err != nil {
					p.res.problem("malformed message on %s: %v", q.url, err)
					continue
				}
				if p.byID[msg.Key()] == nil {
					p.res.problem("message on %s for %s, which nobody sent validly", q.url, msg.Key())
				}
			}
		}
	}
}

// slowPayments makes the payments API slow on a share of new charge and
// notification requests; it reads the request first and, like a real
// server, finishes it even when the client has given up. A slow charge is
// made after the delay (Idempotency-Key covers a repeat meanwhile); a slow
// notification is sent on arrival and only its answer is late, as an API
// that records what it accepted before answering: that is what lets the
// notify step's check tell, after the slow worker's lease ran out, whether
// it was sent.
type slowPayments struct {
	next     http.Handler
	share    float64
	min, max time.Duration
	mu       sync.Mutex
	rng      *mrand.Rand
}

func (s *slowPayments) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.next.ServeHTTP(w, r)
		return
	}
	s.mu.Lock()
	slow := s.rng.Float64() < s.share
	d := s.min + time.Duration(s.rng.Int64N(int64(s.max-s.min)+1))
	s.mu.Unlock()
	if !slow {
		s.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	if r.URL.Path == "/v1/notifications" {
		rec := httptest.NewRecorder()
		r2 := r.Clone(context.WithoutCancel(r.Context()))
		r2.Body = io.NopCloser(bytes.NewReader(body))
		s.next.ServeHTTP(rec, r2)
		time.Sleep(d)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		return
	}
	time.Sleep(d)
	r2 := r.Clone(context.WithoutCancel(r.Context()))
	r2.Body = io.NopCloser(bytes.NewReader(body))
	s.next.ServeHTTP(w, r2)
}
