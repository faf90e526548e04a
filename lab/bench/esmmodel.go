package bench

import (
	"math/rand/v2"
	"time"
)

// ESMModel is what the event source's premises (esm.go) give without the
// emulator: a simulation in virtual time, so it reaches rates and run
// lengths the bench cannot wait for. Messages arrive as a Poisson stream;
// one that arrives while pollers wait goes to one of them at random and
// ends its long poll at once (SQS answers a long poll as soon as a message
// is there); one that finds every poller busy waits for the next receive,
// which takes what is queued up to the batch size. A poller invokes when
// its batch is full, when the window is 0, or at the first receive that
// ends after the window (a message, or the 20 s poll running out).
type ESMModel struct {
	Batch            float64 // mean messages per invocation
	P50, P99         float64 // delay from arrival to invocation, ms
	EmptyPerSecond   float64 // empty receives a second, all pollers
	ReceivesPerEvent float64 // receives that carried messages, per event
}

// ModelESM simulates horizon of traffic at rate events a second.
func ModelESM(rate float64, window time.Duration, batchSize, pollers int, hold, horizon time.Duration, seed uint64) ESMModel {
	if pollers <= 0 {
		pollers = ESMPollers
	}
	rng := rand.New(rand.NewPCG(seed, 0x6d6f64))
	type poller struct {
		batch   []float64 // arrival times of the messages it holds
		first   float64   // when its batch got its first message
		pollEnd float64   // when its long poll runs out (waiting) or its invocation ends (busy)
		busy    bool
	}
	ps := make([]*poller, pollers)
	for i := range ps {
		ps[i] = &poller{pollEnd: ESMLongPoll.Seconds()}
	}
	var (
		queued               []float64 // arrivals no poller has taken
		delays               []float64
		invocations, invoked int
		receives, empty      int
		now                  float64
	)
	end := horizon.Seconds()
	w, long, h := window.Seconds(), ESMLongPoll.Seconds(), hold.Seconds()
	// after a receive at now: invoke, or poll on.
	settle := func(p *poller) {
		if len(p.batch) > 0 && (len(p.batch) >= batchSize || w == 0 || now-p.first >= w) {
			for _, a := range p.batch {
				delays = append(delays, (now-a)*1000)
			}
			invocations++
			invoked += len(p.batch)
			p.batch, p.busy, p.pollEnd = nil, true, now+h
			return
		}
		p.pollEnd = now + long
	}
	take := func(p *poller, msgs ...float64) {
		receives++
		if len(msgs) == 0 {
			empty++
		}
		if len(p.batch) == 0 && len(msgs) > 0 {
			p.first = now
		}
		p.batch = append(p.batch, msgs...)
		settle(p)
	}
	next := rng.ExpFloat64() / rate
	for {
		// the earliest of: the next arrival, a poll running out, an invocation ending
		var soonest *poller
		for _, p := range ps {
			if soonest == nil || p.pollEnd < soonest.pollEnd {
				soonest = p
			}
		}
		if next <= soonest.pollEnd {
			now = next
			if now > end {
				break
			}
			next = now + rng.ExpFloat64()/rate
			var waiting []*poller
			for _, p := range ps {
				if !p.busy {
					waiting = append(waiting, p)
				}
			}
			if len(waiting) == 0 {
				queued = append(queued, now)
				continue
			}
			take(waiting[rng.IntN(len(waiting))], now)
			continue
		}
		p := soonest
		now = p.pollEnd
		if now > end {
			break
		}
		if p.busy { // the invocation ended: delete, then poll again
			p.busy = false
			n := min(len(queued), batchSize)
			if n == 0 {
				p.pollEnd = now + long // counted when it returns
				continue
			}
			msgs := append([]float64(nil), queued[:n]...)
			queued = queued[n:]
			take(p, msgs...)
			continue
		}
		take(p) // the long poll ran out empty
	}
	m := ESMModel{}
	if invocations > 0 {
		m.Batch = float64(invoked) / float64(invocations)
		m.P50, m.P99 = Percentile(delays, 50), Percentile(delays, 99)
	}
	m.EmptyPerSecond = float64(empty) / end
	if invoked > 0 {
		m.ReceivesPerEvent = float64(receives-empty) / float64(invoked)
	}
	return m
}
