// Package ledger is hookledger's DynamoDB ledger: one record per webhook
// event, keyed by (source, tenant, key), whose status moves through a small
// state machine by conditional writes only.
//
// # Items
//
// Each event is two items in one table that has a string partition key "pk"
// and a string sort key "sk":
//
//   - the record (sk "r"): identity, status, lease, counters, timestamps, the
//     body's SHA-256 and the due-index pair due_shard/due_at (kept when the
//     record is done, removed when it is dead). It stays well under 1 KB, so
//     every status change costs one write unit whatever the payload size.
//   - the payload (sk "p"): the raw body, gzip-compressed when that is
//     smaller, marked with its record's body digest. It is written once and
//     never rewritten by a status change. A reader with the record
//     (PayloadOf, Payloads) never takes an item marked with another digest
//     for the record's body: an earlier event's item can outlive its record
//     under a key used again, until TTL removes it.
//
// The partition key is "ev#" followed by source, tenant and key, each escaped
// ("%" as "%25", "#" as "%23") and joined by "#", so no two different triples
// share a stored key.
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
// Claim succeeds from received, failed, or processing whose lease has
// expired (and from received or failed only once a lease_until that Fail
// kept, because a step was left started, has passed); it sets a fresh
// owner token, lease_until and attempts+1 (see Runs), and
// returns a Lease: the ID, the token, the end of the lease and the record as
// claimed. ClaimEvent is the claim for a queue message: the same write also
// requires the record to be the message's event (Identity: its type and
// body digest; Record.Mismatch), and refuses another one with
// ErrNotThisEvent, leaving the record as it was. The record is the one
// source of an event's identity; EnsurePayload keeps a message's body only
// under the same rule. Every write only the lease holder may make takes the Lease:
// SaveSteps, Complete, Fail, Release, Bury and Extend succeed only while its
// token still owns an unexpired lease, and return ErrLeaseLost otherwise.
// Release is Fail for a run the infrastructure cut short (the processor
// could not read the body). The reclaimer's transitions (Requeue, Reset,
// Postpone, Unsent, BuryStale) are conditioned on the version it read, so
// two reclaimers, or a reclaimer and a worker, never both act on one
// record. "Bury" is the one name for marking a record dead.
//
// # Runs
//
// Each claim begins a run of the user's handler, and the record tells the
// runs apart by how they ended, so that what the handler did is never
// confused with what happened to it:
//
//   - attempts: runs begun (claims). The handler sees it as Event.Attempt:
//     1 on the first run, higher after a failure or an interruption.
//   - failures: runs the handler itself failed, with a retryable error or a
//     step check that failed (Fail), and the run that made the event dead
//     (Bury). The processor marks the event dead at the failure that reaches
//     its MaxAttempts, and at once on a permanent error.
//   - interrupted: runs that ended without the handler's answer: the worker
//     crashed or was killed, the Lambda timed out, the lease was lost to
//     another worker, or a call to DynamoDB, SQS or S3 failed the run
//     (Release). A claim counts its run here in advance, in the same write,
//     and the run's answer (Complete, Fail, Bury) takes the count back, so
//     a run that dies anywhere stays counted with no write of its own, and
//     the run in progress counts while the record is processing.
//   - given_back: of the interrupted runs, those given back before the
//     handler ran (Release: the resource was busy, the body unreadable).
//     Record.EarlierRun reads the counters and steps to tell whether an
//     earlier run may have reached the handler.
//   - reclaims: re-drives by the reclaimer, which sets its backoff.
//
// Interruptions do not spend MaxAttempts. They are bounded by time instead:
// the reclaimer re-drives an interrupted event, backing off up to an hour
// between looks, until a day before the record expires (half of the time
// left when that is shorter; the window starts at creation, or at the
// operator's last Replay, replayed_at), and then marks it dead with a cause
// that counts its interrupted runs. With a retention raised to a provider's
// retry horizon plus a day, that is the horizon itself; with the default 7
// days, 6 days. So an unhealthy machine never kills an event within minutes,
// and an event that cannot get through still ends dead, alarmed and
// replayable, with a day left before it expires.
//
// # Steps
//
// A handler's named steps are recorded in the record itself, one attribute
// per step ("step#NAME": status started or done, the result, the time), so
// a retry resumes after the last completed step. The lease holder's writes
// take StepChange values and fold them into their one UpdateItem: the
// processor records a step done in the write that starts the next step
// (SaveSteps) or in Complete, Fail or Bury; an at-most-once step is saved
// as started before its effect runs. Step names are at most MaxStepName
// bytes and results at most MaxStepResult bytes, so the record stays well
// under 1 KB and a status change still costs one write unit. Reset keeps
// the steps; Replay can change them (an operator marks an indeterminate
// step done, or clears it to run again).
//
// # Due index
//
// A sparse global secondary index (DueIndex) on due_shard (number, hash of pk
// modulo Shards) and due_at (milliseconds since the epoch). A record enters
// it at Create, due ReclaimAfter later; every transition that leaves it for
// someone else to finish moves due_at (Fail, Requeue, Reset, Postpone,
// Unsent, Replay), never to a time before the write; Bury and BuryStale
// take a dead record out. Done records keep their entry: taking it out
// would cost a write unit on every event's happy path (see Complete).
//
// So the index holds every record's next look, and the reclaimer reads
// each entry about once: it walks each shard from the mark it left there
// (DueMarks, kept beside the run lock) up to now (DueAfter), reads the
// records it found with eventually consistent reads (Peek), passes the
// terminal ones, reads the rest again with consistent reads (GetMany,
// Payloads) before acting on them, and moves the mark past what it has
// settled. A record is always judged as the table holds it, never as the
// lagging index saw it.
//
// # Limits and other items
//
// NewID is the door of a new event's identity: it refuses, once, what the
// ledger, the queue or the logs could not carry (CheckText, MaxPartLen, an
// encoded partition key over MaxPKBytes). ID.Validate guards the ledger's
// methods against IDs built by hand. CheckPayloadSize tells, before
// anything is written, whether a body fits one payload item (MaxItemBytes)
// after compression, so no record is created whose payload could never be
// stored. The replay guard (ClaimBody) keeps one small item per source,
// tenant, event type and body digest ("rg#..." partition keys,
// sort key "g"), with an expiry and no due-index attributes.
//
// # Order items
//
// A route that keeps its events in order per resource has one order item
// per source, tenant and resource ("ord#..." partition keys, sort key "o",
// no due-index attributes, expiring a retention after its last take): the
// newest position an event took, that event's id and the lease token of its
// run. TakeOrder judges a leased event against it before its handler runs,
// with one read and at most one conditional write: an older position than
// one another event took is stale (ErrStale, nothing written); a holder
// whose run is not over, as its own record's lease tells, makes the
// resource busy (ErrBusy, nothing written); otherwise the write takes it,
// conditioned on the item as read. The holder never writes to release it.
// Skip marks a stale event done with the reason (Record.Skipped), in the
// write Complete would have made; ReplayApplyStale is the replay that lets
// an older event take its resource anyway.
//
// # Guarantees
//
//   - Exactly one Create for a given identity reports created == true, however
//     many run concurrently. A duplicate costs one request: the failed
//     conditional put returns the existing record (ALL_OLD); where an endpoint
//     omits it, the ledger falls back to one consistent read.
//   - At most one worker owns a record's lease at any time, as judged by the
//     ledger's clock check at write time.
//   - A conditional write that the SDK retries after its answer was lost
//     (a client timeout after the write succeeded) recognises itself: Create
//     by the request token it stores in created_by, Claim by its lease
//     token, the reclaimer's transitions and Replay by the request token
//     they store in written_by. The caller gets success, not a duplicate or
//     a conflict. When the SDK could not retry at all (its retry quota
//     spent), these operations read the record back once and recognise
//     their write the same way instead of reporting ErrUnavailable.
//   - done and dead are terminal: no transition leaves dead except Replay,
//     which an operator calls explicitly, and none leaves done.
//   - Expiry is checked in code: a record past expires_at is treated as absent
//     (Create may replace it) even if DynamoDB's TTL has not deleted it yet.
//     expires_at is set once, at Create, from the source's retention
//     (Options.SourceRetention, else Options.Retention); the payload and the
//     replay guard's digest take the same retention, so the payload never
//     expires before its record.
//
// # Sharing the table
//
// Other items may live in the same table under partition keys of their
// own (package idempotency keeps its records there, under "idem#", when
// pointed at it). The ledger never reads them: List and Counts select
// sort key "r", and everything else reads by key.
//
// SDK errors never leave the package: callers branch on the sentinel errors
// (ErrNotFound, ErrLeaseLost, ErrLeased, ErrTerminal, ErrNotThisEvent,
// ErrConflict) or get a
// wrapped ErrUnavailable for throttling, 5xx and transport failures.
package ledger
