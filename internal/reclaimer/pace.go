package reclaimer

import (
	"context"
	"sync"
	"time"
)

// pacer keeps re-driven messages from piling up on the queue. A page is
// admitted only while the estimate of waiting messages (the last depth
// read, plus what was sent since, plus what admitted pages may send) stays
// within max. So a new event never queues behind more than about max
// re-driven ones, and a re-driven message is consumed long before its
// record is due again. Nor does the reclaimer add to the processor's
// backlog: records waiting on a full queue are overdue too, and re-driving
// them would send them twice. The first reading also tells whether the
// queue was idle (see Handler.next).
type pacer struct {
	max  int
	read func(context.Context) (waiting, inFlight int, err error)
	now  func() time.Time // the handler's clock, for the budget

	mu       sync.Mutex
	idle     bool      // the first reading found nothing waiting or in flight
	depth    int       // the last reading
	sent     int       // messages sent since the last reading
	inflight int       // messages admitted pages may still send
	readAt   time.Time // wall clock of the last reading; zero: never read
}

const (
	paceFresh = time.Second            // how old a reading may be to admit a page on it
	paceRetry = 200 * time.Millisecond // the wait before reading again while the queue is full
)

// admit waits until n more messages fit (or the queue is empty: a page
// larger than max goes alone) and books them. It gives up (ok false) at the
// run's end (zero: none) or ctx's; err is a failure to read the depth.
// waited is the time spent waiting for room.
func (p *pacer) admit(ctx context.Context, n int, end time.Time) (waited time.Duration, ok bool, err error) {
	for {
		p.mu.Lock()
		age := time.Since(p.readAt)
		if p.readAt.IsZero() || age >= paceFresh || p.estimate()+n > p.max && age >= paceRetry {
			d, taken, err := p.read(ctx)
			if err != nil {
				p.mu.Unlock()
				return waited, false, err
			}
			if p.readAt.IsZero() {
				p.idle = d == 0 && taken == 0
			}
			// A send that finishes while the depth is read may be counted
			// twice: the estimate errs on the full side.
			p.depth, p.sent, p.readAt = d, 0, time.Now()
		}
		if est := p.estimate(); est+n <= p.max || est == 0 {
			p.inflight += n
			p.mu.Unlock()
			return waited, true, nil
		}
		p.mu.Unlock()
		if !end.IsZero() && !p.now().Add(paceRetry).Before(end) {
			return waited, false, nil
		}
		select {
		case <-ctx.Done():
			return waited, false, nil
		case <-time.After(paceRetry):
			waited += paceRetry
		}
	}
}

// release ends an admitted page of n that sent sent messages.
func (p *pacer) release(n, sent int) {
	p.mu.Lock()
	p.inflight -= n
	p.sent += sent
	p.mu.Unlock()
}

func (p *pacer) estimate() int { return p.depth + p.sent + p.inflight }

// wasIdle reports whether the first reading found the queue idle.
func (p *pacer) wasIdle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idle
}
