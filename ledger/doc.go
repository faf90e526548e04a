// Package ledger is hookledger's DynamoDB ledger: one record per webhook
// event, keyed by (source, tenant, key), whose status moves through a small
// state machine by conditional writes only.
//
// # Items
//
// Each event is two items in one table with string keys "pk" and "sk":
//
//   - the record (sk "r"): identity, status, lease, counters, the last
//     runs, timestamps, the body's SHA-256 and the due-index pair
//     due_shard/due_at (kept when done; when dead, dead_shard/dead_at). It stays under 1 KB, so every status change
//     costs one write unit whatever the payload size.
//   - the payload (sk "p"): the raw body, gzip-compressed when smaller,
//     marked with its record's body digest. No status change rewrites it.
//     A reader with the record (PayloadOf, Payloads) never takes an item
//     marked with another digest: an earlier event's item can outlive its
//     record under a reused key until TTL removes it.
//
// The partition key is "ev#", then source, tenant and key, each escaped
// ("%" as "%25", "#" as "%23") and joined by "#": no two triples share one.
//
// # States
//
//	          Create (attribute_not_exists)
//	               │
//	               ▼
//	          received ──Claim──▶ processing ──Complete──▶ done (terminal)
//	             ▲                  │  │
//	             │                  │  └──Fail, Release──▶ failed ──Claim──▶ processing
//	             └──Reset───────────┘
//	any non-terminal ──Bury (lease holder) / BuryStale (reclaimer)──▶ dead (terminal)
//	dead, failed ──Replay (operator)──▶ received
//
// Claim succeeds from received, failed, or processing with an expired
// lease, and from received or failed only once a lease_until that Fail kept
// has passed. It sets a fresh owner token, lease_until and attempts+1, and
// returns a Lease: the key, the token, the lease's end and the record as
// claimed. ClaimEvent, the claim for a queue message, also requires the
// record to be the message's event (Identity, Record.Mismatch) and refuses
// another with ErrNotThisEvent, writing nothing. EnsurePayload keeps a
// message's body under the same rule.
//
// Every lease holder's write takes the Lease: SaveSteps, Complete, Fail,
// Release, Bury and Extend succeed only while its token owns a live lease,
// else ErrLeaseLost. Release is Fail for a run the infrastructure cut
// short. The reclaimer's transitions (Requeue, Reset, Postpone, Unsent,
// BuryStale) are conditioned on the version it read, so no two actors
// both act on one record. "Bury" is the one name for marking a record dead.
//
// # Runs
//
// Each claim begins a run of the user's handler. The record tells runs
// apart by how they ended, so what the handler did is never confused with
// what happened to it:
//
//   - attempts: runs begun; the handler sees it as Event.Attempt.
//   - failures: runs the handler failed (Fail), and the run that made the
//     event dead (Bury). The processor buries the event at the failure that
//     reaches MaxAttempts, and at once on a permanent error.
//   - interrupted: runs that ended without the handler's answer: a crash,
//     a timeout, a lease lost, a failed AWS call (Release). A claim counts
//     its run here in the same write, and the run's answer takes it back.
//     So a run that dies anywhere stays counted with no write of its own.
//   - given_back: interrupted runs given back before the handler ran
//     (Release). Record.EarlierRun reads these counters and the steps.
//   - reclaims: re-drives by the reclaimer, which sets its backoff.
//
// The record also keeps the last MaxRuns runs (Run): the claim's write
// starts one, shifting the older down, and the write that answers it
// ends it with its outcome and the start of its error. No write is added.
//
// Interruptions do not spend MaxAttempts; time bounds them. The reclaimer
// re-drives an interrupted event, backing off up to an hour, until a day
// before the record expires (or half the time left, when shorter). The
// window starts at creation or at the last Replay. Then it marks the event
// dead with a cause that counts its interrupted runs. So an unhealthy
// machine never kills an event within minutes, and a stuck event still
// ends dead, alarmed and replayable, a day before it expires.
//
// # Steps
//
// A handler's named steps live in the record, one attribute per step
// ("step#NAME": started or done, the result, the time), so a retry resumes
// after the last completed step. The lease holder's writes fold StepChange
// values into their one UpdateItem: a step is recorded done in the write
// that starts the next (SaveSteps), or in Complete, Fail or Bury. An
// at-most-once step is saved as started before its effect runs. Names are
// at most MaxStepName bytes and results MaxStepResult, so the record stays
// under 1 KB. Reset keeps the steps; Replay can change them.
//
// # Due index
//
// A sparse global secondary index (DueIndex) on due_shard (hash of pk
// modulo Shards) and due_at (epoch milliseconds). A record enters it at
// Create, due ReclaimAfter later. Every transition that leaves it for
// someone else to finish moves due_at (Fail, Requeue, Reset, Postpone,
// Unsent, Replay), never to before the write. Bury and BuryStale take a
// dead record out, and put it in the dead index (DeadIndex, dead_shard and
// dead_at) in the same write; Replay takes it out of that. Done records
// keep their due entry: removing it would cost a write unit on every
// event's happy path (see Complete).
//
// The reclaimer walks each shard from its mark (DueMarks) to now
// (DueAfter), passes what Peek shows terminal, and reads the rest again
// consistently (GetMany) before acting: a record is judged as the table
// holds it, never as the lagging index saw it.
//
// # Finding records
//
// Every record is in one of the two indexes, so Find lists records by
// source, tenant, status, type and time without a scan: it merges the
// shards of both, newest first, and reads the page's records in one
// BatchGetItem. A page's reads are bounded (FindBudget), whatever the
// table holds. Records buried before the dead index existed are in
// neither; List, a scan, still finds them.
//
// # Limits and other items
//
// NewKey refuses, once, what the ledger, the queue or the logs could not
// carry (CheckText, MaxPartLen, MaxPKBytes); Key.Validate guards keys built
// by hand. CheckPayloadSize tells, before any write, whether a body fits
// one payload item (MaxItemBytes) compressed. The replay guard (ClaimBody)
// keeps one small item per source, tenant, event type and body digest
// ("rg#..." keys, sort key "g"), with an expiry and no due-index
// attributes.
//
// # Order items
//
// A route that keeps its events in order has one order item per source,
// tenant and resource ("ord#..." keys, sort key "o", no due-index
// attributes, expiring a retention after its last take): the newest
// position taken, its event and its run's lease token. TakeOrder judges a
// leased event against it (ErrStale, ErrBusy, or taken); the holder never
// writes to release it. Skip marks a stale event done with the reason.
//
// # Guarantees
//
//   - Exactly one concurrent Create for an identity reports created ==
//     true. A duplicate costs one request: the failed put returns the
//     existing record (ALL_OLD), or one consistent read where omitted.
//   - At most one worker owns a record's lease at a time, as judged by the
//     ledger's clock at write time.
//   - A conditional write the SDK retries after a lost answer recognises
//     itself: Create by the token in created_by, Claim by its lease token,
//     the reclaimer's transitions and Replay by the token in written_by.
//     The caller gets success, not a duplicate or a conflict. When the SDK
//     could not retry, these read the record back once instead of
//     reporting ErrUnavailable.
//   - done and dead are terminal: only an operator's Replay leaves dead,
//     and nothing leaves done.
//   - Expiry is checked in code: a record past expires_at is absent
//     (Create may replace it) even before TTL deletes it. expires_at is set
//     once, at Create, from the source's retention; the payload and the
//     replay guard take the same, so a payload never expires before its
//     record.
//
// # Format
//
// Every write to a record stores the record format of the code (Format)
// and its release. A record without one is format 1, written before 0.1.0:
// the run counters it lacks are derived when it is read, and its first
// write stores them. The table keeps its newest format in one item
// ("ledger#meta", sort key "format"). UseFormat, at each cold start, reads
// it, raises an older one and refuses a newer one: that code would misread
// the records.
//
// # Sharing the table
//
// Other items may live in the table under their own partition keys
// (package idempotency uses "idem#"). The ledger never reads them: List,
// Counts and Find select sort key "r", and everything else reads by key.
//
// SDK errors never leave the package: callers branch on the sentinel
// errors (ErrNotFound, ErrLeaseLost, ErrLeased, ErrTerminal,
// ErrNotThisEvent, ErrConflict) or get a wrapped ErrUnavailable for
// throttling, 5xx and transport failures.
package ledger
