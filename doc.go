// Package hookledger is the contract between your side effects and the
// hookledger pipeline: everything the code in effect/ touches.
//
// The pipeline verifies each webhook delivery, records the event once in a
// DynamoDB ledger however often the sender delivers it, and hands it to your
// Handler, routed by source and event type. A handler performs the event's
// side effects as named steps:
//
//	r := hookledger.NewRouter()
//	r.HandleFunc("stripe", "invoice.paid", func(ctx context.Context, ev *hookledger.Event) error {
//		chargeID, err := ev.Step(ctx, "charge", func(ctx context.Context, key string) (string, error) {
//			return payments.Charge(ctx, key, amount) // key is the downstream Idempotency-Key
//		})
//		if err != nil {
//			return err // retried later; "charge" will not run again once recorded done
//		}
//		_, err = ev.Step(ctx, "email", func(ctx context.Context, key string) (string, error) {
//			return mailer.Send(ctx, key, receipt(chargeID)) // key as the mail's reference, for the check
//		}, hookledger.AtMostOnce(), hookledger.Check(mailer.SentWithRef)) // finds the mail by that reference
//		return err
//	})
//
// The ledger records each step's completion, so a retry after a crash
// resumes after the last completed step instead of running the event from
// the top. A step is at-least-once by default: if the process dies after
// the effect but before its completion is recorded, the retry runs it
// again with the same downstream key, which an API that honours idempotency
// keys absorbs. A step marked AtMostOnce is recorded as started before it
// runs; a retry that finds it started but not done asks its Check, and
// without a definite answer the event goes dead ("indeterminate step
// NAME"), alarmed, for an operator to resolve with `hookledger replay`.
//
// Senders deliver out of order. A route whose handler writes the payload's
// state can keep its events in order per resource: InOrder(stripe.Object)
// (or ShopifyResource, PaddleEntity, your own OrderFunc) makes the ledger
// compare each event's position with the newest one applied to its
// resource before the handler runs, and hold the resource while it runs;
// SkipStale skips an event older than one already applied, or the handler
// asks ev.Order().Stale and decides.
//
// Returning an error retries the event later (the record is "failed" until
// then); Permanent(err) sends it to "dead" at once. Package hookledgertest
// runs a handler in memory with the same step rules, simulates crashes after
// any step, and counts how often each step ran.
package hookledger
