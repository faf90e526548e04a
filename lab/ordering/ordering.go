// Package ordering is the proof of InOrder routes in the pipeline: many
// updates of a few resources, signed as Stripe sends them, delivered
// through the real receiver in random order with duplicates, processed by
// concurrent pollers through the real processor against the emulator, with
// a handler that writes each update's state, and an oracle that records,
// per resource, the order in which states were applied.
package ordering

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/hookledger/hookledger"
)

// Update is one customer.subscription.updated event: the Seq-th update of
// subscription Sub, created at Base + Seq seconds.
type Update struct {
	ID  string
	Sub string
	Seq int
}

// Base is the created time of every subscription's update 0.
const Base = 1_700_000_000

// Body is the update's Stripe event body: the subscription's state (its
// seq) and the event's created time, as Stripe sends it.
func (u Update) Body() []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","type":"customer.subscription.updated","created":%d,`+
		`"data":{"object":{"id":%q,"object":"subscription","status":"active","metadata":{"seq":"%d"}}}}`, u.ID, Base+u.Seq, u.Sub, u.Seq)
}

// Updates returns perSub updates (seq 1..perSub) of each of subs
// subscriptions.
func Updates(subs, perSub int) []Update {
	out := make([]Update, 0, subs*perSub)
	for s := range subs {
		for q := 1; q <= perSub; q++ {
			out = append(out, Update{ID: fmt.Sprintf("evt_%03d_%03d", s, q), Sub: fmt.Sprintf("sub_%03d", s), Seq: q})
		}
	}
	return out
}

// Deliveries is the order the sender posts them in: every update once,
// and dupShare of them once more. The updates of the subscriptions in
// nearly come almost in order, as senders mostly deliver (sorted by seq,
// then each moved up to window places at random), so that many of them
// are newer than what was applied and meet each other in flight; the rest
// come in a random order, so that most are stale. The two streams
// interleave at random, in runs of a few dozen deliveries.
func Deliveries(us []Update, nearly map[string]bool, window int, dupShare float64, rng *rand.Rand) []Update {
	var random, ordered []Update
	for _, u := range us {
		copies := 1
		if rng.Float64() < dupShare {
			copies = 2
		}
		for range copies {
			if nearly[u.Sub] {
				ordered = append(ordered, u)
			} else {
				random = append(random, u)
			}
		}
	}
	rng.Shuffle(len(random), func(i, j int) { random[i], random[j] = random[j], random[i] })
	sort.SliceStable(ordered, func(i, j int) bool {
		if ordered[i].Seq != ordered[j].Seq {
			return ordered[i].Seq < ordered[j].Seq
		}
		return ordered[i].Sub < ordered[j].Sub
	})
	for i := range ordered {
		j := i + rng.IntN(min(window, len(ordered)-i))
		ordered[i], ordered[j] = ordered[j], ordered[i]
	}
	// Interleave in runs of burst deliveries, so that a run of the nearly
	// ordered stream holds several updates of each of its subscriptions.
	const burst = 40
	out := make([]Update, 0, len(random)+len(ordered))
	for len(random)+len(ordered) > 0 {
		from := &random
		if rng.IntN(len(random)+len(ordered)) >= len(random) {
			from = &ordered
		}
		n := min(burst, len(*from))
		out, *from = append(out, (*from)[:n]...), (*from)[n:]
	}
	return out
}

// Oracle records what the handler applied, independently of the ledger.
type Oracle struct {
	mu      sync.Mutex
	applied map[string][]applied // by subscription, in the order applied
	inside  map[string]int       // handlers applying each subscription right now
	overlap []string             // two handlers of one subscription at once
}

type applied struct {
	seq int
	id  string
}

// NewOracle returns an empty oracle.
func NewOracle() *Oracle {
	return &Oracle{applied: map[string][]applied{}, inside: map[string]int{}}
}

// Handler writes an update's state: it records the update as applied to
// its subscription. It fails failShare of first attempts before applying
// anything (a downstream hiccup: the event is retried), and takes up to
// maxPause to apply, so that runs of one subscription overlap in time if
// the ledger lets them.
func (o *Oracle) Handler(failShare float64, maxPause time.Duration) hookledger.HandlerFunc {
	return func(ctx context.Context, ev *hookledger.Event) error {
		u, err := parse(ev.Body)
		if err != nil {
			return hookledger.Permanent(err)
		}
		h := hash(ev.ID)
		if ev.Attempt == 1 && float64(h%1000) < failShare*1000 {
			return fmt.Errorf("downstream hiccup applying %s", ev.ID)
		}
		o.mu.Lock()
		o.inside[u.Sub]++
		if o.inside[u.Sub] > 1 {
			o.overlap = append(o.overlap, fmt.Sprintf("%s: %s applied while another update of it was being applied", u.Sub, ev.ID))
		}
		o.mu.Unlock()
		if maxPause > 0 {
			time.Sleep(time.Duration(h%uint64(maxPause/time.Microsecond)) * time.Microsecond)
		}
		o.mu.Lock()
		o.applied[u.Sub] = append(o.applied[u.Sub], applied{seq: u.Seq, id: ev.ID})
		o.inside[u.Sub]--
		o.mu.Unlock()
		return nil
	}
}

// Applied reports how many updates were applied in all, and the ids of
// those applied at least once.
func (o *Oracle) Applied() (int, map[string]bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n, ids := 0, map[string]bool{}
	for _, as := range o.applied {
		n += len(as)
		for _, a := range as {
			ids[a.id] = true
		}
	}
	return n, ids
}

// Check returns every violation: a subscription whose last applied state is
// not its newest (perSub), an older state applied after a newer one (the
// same update applied again, after a retry, is not older), and two
// applications of one subscription at once.
func (o *Oracle) Check(subs []string, perSub int) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	bad := append([]string(nil), o.overlap...)
	sort.Strings(subs)
	for _, s := range subs {
		as := o.applied[s]
		if len(as) == 0 {
			bad = append(bad, s+": nothing applied")
			continue
		}
		if last := as[len(as)-1]; last.seq != perSub {
			bad = append(bad, fmt.Sprintf("%s: last applied is update %d (%s), not the newest, %d", s, last.seq, last.id, perSub))
		}
		for i := 1; i < len(as); i++ {
			if as[i].seq < as[i-1].seq || as[i].seq == as[i-1].seq && as[i].id != as[i-1].id {
				bad = append(bad, fmt.Sprintf("%s: update %d (%s) applied after update %d (%s)", s, as[i].seq, as[i].id, as[i-1].seq, as[i-1].id))
			}
		}
	}
	return bad
}

func parse(body []byte) (Update, error) {
	var u Update
	var e struct {
		ID   string `json:"id"`
		Data struct {
			Object struct {
				ID       string `json:"id"`
				Metadata struct {
					Seq string `json:"seq"`
				} `json:"metadata"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		return u, err
	}
	if _, err := fmt.Sscan(e.Data.Object.Metadata.Seq, &u.Seq); err != nil {
		return u, fmt.Errorf("update %s has no seq: %w", e.ID, err)
	}
	u.ID, u.Sub = e.ID, e.Data.Object.ID
	return u, nil
}

// hash is FNV-1a: a fixed, event-dependent choice of which runs fail and
// how long they take.
func hash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
