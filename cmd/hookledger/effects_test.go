package main

import (
	"context"
	"sync"

	"github.com/hookledger/hookledger"
)

// effects is the oracle of the pipeline tests in this package: routes that
// record every downstream effect by its step key, so a test can tell how
// often each event's effects happened. They stand in for the user's
// effect/, which these tests never depend on.
type effects struct {
	mu      sync.Mutex
	charges map[string]int // charge step key -> requests
	notes   map[string]int // notify step key -> messages
	events  map[string]int // event id -> handler runs that charged
}

func newEffects() *effects {
	return &effects{charges: map[string]int{}, notes: map[string]int{}, events: map[string]int{}}
}

// routes handles stripe/invoice.paid with two steps: an at-least-once
// charge with a check, and an at-most-once notification with a check.
func (e *effects) routes() *hookledger.Router {
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "invoice.paid", func(ctx context.Context, ev *hookledger.Event) error {
		if _, err := ev.Step(ctx, "charge", func(ctx context.Context, key string) (string, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.charges[key]++
			e.events[ev.ID]++
			return "ch_" + key[3:13], nil
		}, hookledger.Check(e.find(e.charges))); err != nil {
			return err
		}
		_, err := ev.Step(ctx, "notify", func(ctx context.Context, key string) (string, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.notes[key]++
			return "", nil
		}, hookledger.AtMostOnce(), hookledger.Check(e.find(e.notes)))
		return err
	})
	return r
}

func (e *effects) find(m map[string]int) hookledger.CheckFunc {
	return func(_ context.Context, key string) (string, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if m[key] == 0 {
			return "", hookledger.ErrNotDone
		}
		return "", nil
	}
}

// counts reports the charges and notifications made, and how many of each
// happened more than once for one event.
func (e *effects) counts() (charges, notes, chargedTwice, notifiedTwice int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range e.charges {
		charges += n
		if n > 1 {
			chargedTwice++
		}
	}
	for _, n := range e.notes {
		notes += n
		if n > 1 {
			notifiedTwice++
		}
	}
	return
}
