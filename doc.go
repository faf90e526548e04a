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
// resumes after the last completed step. A step is at-least-once by
// default: a crash after the effect but before its record runs it again
// with the same downstream key, which an API that honours idempotency keys
// absorbs. An AtMostOnce step is recorded started before it runs; a retry
// that finds it started but not done asks its Check, and without a
// definite answer the event goes dead ("indeterminate step NAME"),
// alarmed, for an operator to resolve with `hookledger replay`.
//
// Senders deliver out of order. A route that writes the payload's state can
// keep its events in order per resource with InOrder(stripe.Object) (or
// ShopifyResource, PaddleEntity, your own OrderFunc): the ledger compares
// each event's position with the newest applied to its resource, and
// holds the resource while the handler runs. SkipStale skips older events,
// or the handler asks ev.Order().Stale.
//
// Returning an error retries the event later; Permanent(err) makes it dead
// at once. Package hookledgertest runs a handler in memory with the same
// step rules, simulates crashes after any step, and counts step runs.
package hookledger
