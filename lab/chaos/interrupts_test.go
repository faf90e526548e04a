package chaos

import (
	"math/rand/v2"
	"testing"
)

// TestKillerDecisions plays the interrupts phase's killer against a model
// of the shipped effect (a charge step with a check, then an at-most-once
// notification step with a check) and of the ledger's run counters, with
// runs also dying of other events' kills before they reach a request of
// their own. Whatever the pattern, the target's first repeatKills runs end
// killed, it ends done, the charge and the notification are each made
// once, and only the planned failure counts as one.
func TestKillerDecisions(t *testing.T) {
	t.Parallel()
	for seed := range uint64(200) {
		for _, failOnce := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(seed, 1))
			tg := &target{failOnce: failOnce}
			var (
				interrupted, failures, runs int
				charges, notes              int
				chargeDone, notifyStarted   bool
				done                        bool
			)
			for !done {
				runs++
				if runs > 100 {
					t.Fatalf("seed %d failOnce %v: not done after 100 runs", seed, failOnce)
				}
				interrupted++ // the claim counts the run until its answer
				if interrupted <= repeatKills && rng.IntN(3) == 0 {
					continue // another event's kill took this run down first
				}
				answer := func(failed bool) {
					interrupted--
					if failed {
						failures++
					}
				}
				if !chargeDone {
					if runs > 1 && charges > 0 {
						chargeDone = true // the check finds the charge
					} else {
						kill, forward, fail := tg.decide(true, interrupted, failures)
						if forward && charges == 0 {
							charges++ // the payments API dedups a repeat by Idempotency-Key
						}
						if kill {
							continue
						}
						if fail {
							if rng.IntN(3) == 0 {
								continue // killed by another event's kill before the failure was recorded
							}
							answer(true)
							continue
						}
						chargeDone = true
					}
				}
				if notifyStarted && notes > 0 {
					answer(false) // the check finds the notification: done
					done = true
					continue
				}
				notifyStarted = true
				kill, forward, fail := tg.decide(false, interrupted, failures)
				if forward {
					notes++ // no idempotency: every request sends one
				}
				switch {
				case kill:
					continue
				case fail && rng.IntN(3) == 0:
					continue // killed before the failure was recorded
				case fail:
					answer(true)
					continue
				}
				answer(false)
				done = true
			}
			want := 0
			if failOnce {
				want = 1
			}
			if interrupted < repeatKills || failures != want || charges != 1 || notes != 1 || tg.kills == 0 {
				t.Fatalf("seed %d failOnce %v: %d runs, %d interrupted, %d failures, %d charges, %d notifications, %d kills at its own requests",
					seed, failOnce, runs, interrupted, failures, charges, notes, tg.kills)
			}
		}
	}
}
