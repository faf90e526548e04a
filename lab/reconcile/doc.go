// Package reconcile proves `hookledger reconcile` (internal/reconcile and
// the operator command) against the provider stand-ins of lab/providerstub:
// the reconciler's own logic with an in-memory ledger, the scheduled
// handler's metrics, and outages healed through the whole pipeline in the
// emulator, each lost event processed once. Its benchmarks price a run per
// listed event.
package reconcile
