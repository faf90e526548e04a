// Package reconcile recovers events a sender never delivered (an endpoint
// down longer than the sender retries, or deliveries it dropped). It asks
// the provider's API what it sent in a window, looks each event up in the
// ledger, and feeds each missing one through the receiver: rebuilt, signed
// with the tenant's secret, posted to the webhook URL or handed to the
// receiver function. The receiver dedups it like any delivery, so an event
// fed twice, or arriving meanwhile, is still processed once.
//
// Stripe and GitHub implement Provider; docs/reconcile.md says why others
// cannot.
package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookledger/hookledger/internal/fallback"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// Event is one event a provider says it sent, or tried to send, to the endpoint.
type Event struct {
	// ID is the provider's id of the event, the receiver's default key
	// (Stripe's event id, GitHub's delivery GUID).
	ID   string
	Type string // the delivery's event type
	// At is when the provider created the event or first tried to deliver
	// it; no ledger record of it can be older.
	At     time.Time
	Failed bool // the provider records no successful delivery

	ref  string // provider handle to fetch the delivery (GitHub: a delivery id)
	body []byte // the body, when the list already carried it (Stripe)
}

// Delivery is a webhook rebuilt from the provider's API, unsigned: the
// message and the provider's headers that are not about the signature.
type Delivery struct {
	Message webhook.Message
	Header  http.Header
}

// Provider is what reconcile needs from a provider's API.
type Provider interface {
	Name() string             // the provider scheme ("stripe", "github")
	Retention() time.Duration // how far back the provider's API reaches
	// List calls fn with every event sent or attempted at or after since,
	// each once. It stops at fn's first error and returns it.
	List(ctx context.Context, since time.Time, fn func(Event) error) error
	// Rebuild returns the delivery of ev as far as the API tells.
	Rebuild(ctx context.Context, ev Event) (Delivery, error)
}

// scoper is a provider that says what it lists.
type scoper interface{ Scope() string }

// Redeliverer is a provider that can send an event again itself (GitHub's
// POST .../attempts): a genuine delivery through the front door.
type Redeliverer interface {
	Redeliver(ctx context.Context, ev Event) error
}

// existence is the slice of the ledger reconcile reads.
type existence interface {
	Exists(ctx context.Context, id ledger.Key) (bool, error)
}

var _ existence = (*ledger.Ledger)(nil)

// Outcome is the receiver's answer to a fed delivery.
type Outcome struct {
	Status int    // HTTP status
	Result string // the X-Hookledger-Result header: accepted, duplicate, ...
	// RetryAfter is a 429's or 503's Retry-After, when the answer had one.
	RetryAfter time.Duration
}

// Feeder hands a delivery to the receiver: by HTTP to the webhook URL
// (HTTPFeeder), or by invoking the receiver function (LambdaFeeder).
type Feeder interface {
	Feed(ctx context.Context, source, tenant string, hdr http.Header, body []byte) (Outcome, error)
	// URL is where the receiver sees the delivery, for schemes that sign it.
	URL(source, tenant string) string
}

// RetentionMargin is kept between the window and the ledger's retention: an
// older event's record may have expired, and feeding it would run it twice.
const RetentionMargin = time.Hour

// Job is one reconciliation: one source and tenant against one provider API.
type Job struct {
	Source, Tenant string
	Provider       Provider
	// Verifier and Secrets are the source's verifier and the tenant's
	// resolved signing secrets (the first signs; the receiver accepts any).
	Verifier *webhook.Verifier
	Secrets  []string
	// KeyFromDelivery: the source keys events by key_path or key_header,
	// so the key is read from the rebuilt delivery, as the receiver would.
	KeyFromDelivery bool
	Window          time.Duration // how far back to look
	MinAge          time.Duration // younger events are left to the sender's retries
	// Retention is the ledger's; Window stays RetentionMargin inside it.
	Retention time.Duration
	DryRun    bool
	// Redeliver asks the provider to deliver missing events again itself,
	// where it can (GitHub), instead of feeding rebuilt deliveries.
	Redeliver bool
}

// Validate checks the job's window against the ledger's retention.
func (j Job) Validate() error {
	switch {
	case j.Provider == nil || j.Verifier == nil:
		return errors.New("reconcile: job without provider or verifier")
	case len(j.Secrets) == 0 && !j.DryRun && !j.Redeliver:
		return fmt.Errorf("reconcile %s/%s: the tenant has no signing secret to sign rebuilt deliveries with", j.Source, j.Tenant)
	case j.Window <= 0:
		return fmt.Errorf("reconcile %s/%s: the window must be positive", j.Source, j.Tenant)
	case j.Retention > 0 && j.Window > j.Retention-RetentionMargin:
		return fmt.Errorf("reconcile %s/%s: window %v reaches beyond the ledger's retention %v minus %v: records of older events may have expired, and feeding such an event again would run its effects twice; use a window of at most %v, or raise HOOKLEDGER_RETENTION",
			j.Source, j.Tenant, j.Window, j.Retention, RetentionMargin, j.Retention-RetentionMargin)
	case j.MinAge < 0:
		return fmt.Errorf("reconcile %s/%s: min age must not be negative", j.Source, j.Tenant)
	}
	return nil
}

// Counts are a run's numbers.
type Counts struct {
	Seen      int `json:"seen"`       // distinct events the provider listed in the window
	InLedger  int `json:"in_ledger"`  // of those, already in the ledger
	Missing   int `json:"missing"`    // not in the ledger
	Fed       int `json:"fed"`        // missing, fed and accepted as new (recovered)
	Duplicate int `json:"duplicate"`  // missing, fed, but answered duplicate: it arrived meanwhile
	Requested int `json:"requested"`  // missing, redelivery asked of the provider
	Failed    int `json:"failed"`     // missing and could not be fed
	TooRecent int `json:"too_recent"` // younger than MinAge: left to the sender
	TooOld    int `json:"too_old"`    // original delivery outside the window: not judged
}

// Recovered is how many missing events are now in the ledger (fed, or
// answered duplicate); a requested redelivery shows only in a later run.
func (c Counts) Recovered() int { return c.Fed + c.Duplicate }

// Found is one missing event and what became of it.
type Found struct {
	Key    string    `json:"event_id"`
	Type   string    `json:"event_type"`
	At     time.Time `json:"at"`
	Result string    `json:"result"` // accepted, duplicate (duplicate_rejected_conflict: a 409 under HOOKLEDGER_MISMATCH=reject), redelivery_requested, dry_run, or failed: reason
}

// Report is a run's result.
type Report struct {
	Source   string    `json:"source"`
	Tenant   string    `json:"tenant"`
	Provider string    `json:"provider"`
	Since    time.Time `json:"since"`
	Scope    string    `json:"scope"` // what the provider was asked for
	DryRun   bool      `json:"dry_run,omitempty"`
	Counts
	Found []Found `json:"missing_events"` // the missing events, oldest first
}

// Reconciler runs jobs. Its fields are its dependencies.
type Reconciler struct {
	Ledger      existence
	Feeder      Feeder // nil only for dry runs and redelivery
	Log         *slog.Logger
	Now         func() time.Time
	Concurrency int // events checked and fed at once (default 8)
	// Retries is how often a feed answered 5xx or unreachable is tried
	// again (default 3), Backoff the first wait (default 1s, doubling).
	Retries int
	Backoff time.Duration
	Sleep   func(ctx context.Context, d time.Duration) error // between feed attempts (nil: a timer)
}

func (r *Reconciler) now() time.Time { return fallback.Now(r.Now) }

func (r *Reconciler) log() *slog.Logger { return fallback.Logger(r.Log) }

// Run reconciles one job. The report holds what was done even when an error
// stopped the run; per-event feed failures are counted, not returned.
func (r *Reconciler) Run(ctx context.Context, job Job) (Report, error) {
	now := r.now()
	rep := Report{Source: job.Source, Tenant: job.Tenant, Provider: job.Provider.Name(), Since: now.Add(-job.Window).UTC(), DryRun: job.DryRun, Scope: "every event"}
	if s, ok := job.Provider.(scoper); ok {
		rep.Scope = s.Scope()
	}
	if err := job.Validate(); err != nil {
		return rep, err
	}
	if r.Feeder == nil && !job.DryRun && !job.Redeliver {
		return rep, errors.New("reconcile: no feeder (webhook URL or receiver function) to feed missing events through")
	}
	if job.Window > job.Provider.Retention() {
		r.log().WarnContext(ctx, "reconcile window is longer than the provider keeps events; older ones cannot be found",
			"source", job.Source, "tenant", job.Tenant, "window", job.Window.String(), "provider_retention", job.Provider.Retention().String())
	}
	oldest := now.Add(-(job.Retention - RetentionMargin))
	if job.Retention <= 0 {
		oldest = rep.Since
	}
	recent := now.Add(-job.MinAge)

	workers := fallback.Positive(r.Concurrency, 8)
	var t tally
	var seen, tooOld, tooRecent int // the listing's own; the workers book under t.mu
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan Event)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ev := range work {
				key, res, err := r.one(ctx, job, ev)
				if err != nil {
					// The ledger is unreadable: nothing can be judged.
					t.stop(err)
					cancel()
					continue
				}
				t.judged(key, ev, res)
			}
		})
	}
	listErr := job.Provider.List(ctx, rep.Since, func(ev Event) error {
		seen++
		switch {
		case ev.At.Before(oldest) || ev.At.Before(rep.Since):
			tooOld++
			return nil
		case ev.At.After(recent):
			tooRecent++
			return nil
		}
		select {
		case work <- ev:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(work)
	wg.Wait()

	t.Seen, t.TooOld, t.TooRecent = seen, tooOld, tooRecent
	rep.Counts, rep.Found = t.Counts, t.sorted()
	if t.firstErr != nil {
		return rep, t.firstErr
	}
	if listErr != nil {
		return rep, fmt.Errorf("reconcile %s/%s: list %s events: %w", job.Source, job.Tenant, job.Provider.Name(), listErr)
	}
	return rep, nil
}

// tally gathers what a run's workers found.
type tally struct {
	mu sync.Mutex
	Counts
	found    []Found
	firstErr error // what stopped the run
}

// judged books one event: res is "" when it is in the ledger, else what became of it.
func (t *tally) judged(key string, ev Event, res string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if res == "" {
		t.InLedger++
		return
	}
	t.Missing++
	switch {
	case res == "accepted":
		t.Fed++
	case strings.HasPrefix(res, "duplicate"):
		t.Duplicate++
	case res == "redelivery_requested":
		t.Requested++
	case strings.HasPrefix(res, "failed"):
		t.Failed++
	}
	t.found = append(t.found, Found{Key: key, Type: ev.Type, At: ev.At.UTC(), Result: res})
}

// stop keeps the first error that stopped the run.
func (t *tally) stop(err error) {
	t.mu.Lock()
	if t.firstErr == nil {
		t.firstErr = err
	}
	t.mu.Unlock()
}

// sorted is what the run found, oldest first (an empty list, not nil).
func (t *tally) sorted() []Found {
	slices.SortFunc(t.found, func(a, b Found) int { return a.At.Compare(b.At) })
	if t.found == nil {
		return []Found{}
	}
	return t.found
}

// one judges one event: its key and "" when it is in the ledger, else
// what was done with it. An error means the ledger could not be read.
func (r *Reconciler) one(ctx context.Context, job Job, ev Event) (key, result string, _ error) {
	key = ev.ID
	var d *Delivery
	if job.KeyFromDelivery {
		rebuilt, err := job.Provider.Rebuild(ctx, ev)
		if err != nil {
			return key, "failed: rebuild: " + err.Error(), nil
		}
		d = &rebuilt
		k, err := r.keyOf(job, rebuilt)
		if err != nil {
			return key, "failed: " + err.Error(), nil
		}
		key = k
	}
	id := ledger.Key{Source: job.Source, Tenant: job.Tenant, ID: key}
	if err := id.Validate(); err != nil {
		return key, "failed: " + err.Error(), nil
	}
	ok, err := r.Ledger.Exists(ctx, id)
	if err != nil {
		return key, "", fmt.Errorf("reconcile %s: %w", id, err)
	}
	if ok {
		return key, "", nil
	}
	result = r.missing(ctx, job, ev, key, d)
	return key, result, nil
}

// missing brings in one event the ledger lacks, or only lists it.
func (r *Reconciler) missing(ctx context.Context, job Job, ev Event, key string, d *Delivery) string {
	log := r.log().With("source", job.Source, "tenant", job.Tenant, "event_id", key, "event_type", ev.Type)
	if job.DryRun {
		log.InfoContext(ctx, "reconcile: missing (dry run)")
		return "dry_run"
	}
	if rd, ok := job.Provider.(Redeliverer); ok && job.Redeliver {
		if err := rd.Redeliver(ctx, ev); err != nil {
			log.WarnContext(ctx, "reconcile: redelivery request failed", "error", err.Error())
			return "failed: redeliver: " + err.Error()
		}
		log.InfoContext(ctx, "reconcile: missing; redelivery requested")
		return "redelivery_requested"
	}
	if d == nil {
		rebuilt, err := job.Provider.Rebuild(ctx, ev)
		if err != nil {
			log.WarnContext(ctx, "reconcile: could not rebuild the delivery", "error", err.Error())
			return "failed: rebuild: " + err.Error()
		}
		d = &rebuilt
	}
	res := r.feed(ctx, job, key, *d)
	level := slog.LevelInfo
	if strings.HasPrefix(res, "failed") {
		level = slog.LevelWarn
	}
	log.Log(ctx, level, "reconcile: missing; fed through the receiver", "result", res)
	return res
}

// sign returns d's headers, signed with the tenant's first secret.
func (r *Reconciler) sign(job Job, url string, d Delivery) (http.Header, error) {
	if len(job.Secrets) == 0 {
		return nil, errors.New("no signing secret")
	}
	m := d.Message
	m.URL, m.Now = url, r.now()
	hdr, err := job.Verifier.Sign(m, job.Secrets[0])
	if err != nil {
		return nil, err
	}
	for k, vs := range d.Header {
		// The provider's own content type wins (GitHub's form-encoded
		// hooks); other headers never replace the signature's.
		if hdr.Get(k) == "" || http.CanonicalHeaderKey(k) == "Content-Type" {
			hdr[http.CanonicalHeaderKey(k)] = vs
		}
	}
	hdr.Set("User-Agent", "hookledger-reconcile")
	return hdr, nil
}

// verified signs d for url and verifies it as the receiver will, returning headers and key.
func (r *Reconciler) verified(job Job, url string, d Delivery) (http.Header, string, error) {
	hdr, err := r.sign(job, url, d)
	if err != nil {
		return nil, "", fmt.Errorf("sign: %w", err)
	}
	ev, err := job.Verifier.Verify(&webhook.Request{Method: http.MethodPost, URL: url, Header: hdr, Body: d.Message.Body}, job.Secrets, r.now())
	if err != nil {
		return nil, "", fmt.Errorf("the rebuilt delivery does not verify: %w", err)
	}
	return hdr, ev.ID, nil
}

// keyOf is the key the receiver will find in d.
func (r *Reconciler) keyOf(job Job, d Delivery) (string, error) {
	if len(job.Secrets) == 0 {
		return "", errors.New("the key comes from the delivery and no signing secret is configured to read it")
	}
	url := ""
	if r.Feeder != nil {
		url = r.Feeder.URL(job.Source, job.Tenant)
	}
	_, key, err := r.verified(job, url, d)
	return key, err
}

// feed signs d and hands it to the receiver, retrying answers that say
// "later" (5xx, 429, no connection). A 409 rejected_conflict counts as
// duplicate: the event is in the ledger.
func (r *Reconciler) feed(ctx context.Context, job Job, key string, d Delivery) string {
	url := r.Feeder.URL(job.Source, job.Tenant)
	// Never send a delivery the receiver would key differently.
	hdr, got, err := r.verified(job, url, d)
	if err != nil {
		return "failed: " + err.Error()
	}
	if got != key {
		return fmt.Sprintf("failed: the rebuilt delivery keys as %q, not %q", got, key)
	}
	retries, wait := fallback.Positive(r.Retries, 3), fallback.Positive(r.Backoff, time.Second)
	var last string
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			// Sign again: the signature's timestamp must stay within the
			// receiver's tolerance.
			if hdr, err = r.sign(job, url, d); err != nil {
				return "failed: sign: " + err.Error()
			}
		}
		out, err := r.Feeder.Feed(ctx, job.Source, job.Tenant, hdr, d.Message.Body)
		d := wait
		switch {
		case err == nil && out.Status >= 200 && out.Status < 300:
			return cmp.Or(out.Result, "accepted")
		case err == nil && out.Status == http.StatusConflict && out.Result == conflictResult:
			// HOOKLEDGER_MISMATCH=reject: the key is held with other
			// bytes. A rebuilt body never equals the original, so the
			// sender's own delivery won the race: the event is present.
			return conflictDuplicate
		case err == nil && out.Status == http.StatusTooManyRequests:
			// Throttled (API Gateway, the receiver's concurrency): later.
			last = fmt.Sprintf("the receiver answered %d %s", out.Status, out.Result)
			if out.RetryAfter > d {
				d = out.RetryAfter
			}
		case err == nil && out.Status < 500:
			return fmt.Sprintf("failed: the receiver answered %d %s", out.Status, out.Result)
		case err != nil:
			last = err.Error()
		default:
			last = fmt.Sprintf("the receiver answered %d %s", out.Status, out.Result)
		}
		if attempt >= retries {
			return "failed: " + last
		}
		if err := fallback.Sleep(ctx, d, r.Sleep); err != nil {
			return "failed: " + err.Error()
		}
		wait *= 2
	}
}

// conflictResult is the receiver's 409 under HOOKLEDGER_MISMATCH=reject;
// conflictDuplicate is what reconcile records for it (a duplicate).
const (
	conflictResult    = "rejected_conflict"
	conflictDuplicate = "duplicate_rejected_conflict"
)
