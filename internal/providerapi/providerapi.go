// Package providerapi calls Stripe's and GitHub's REST APIs as they ask:
// authentication, retries under their rate-limit rules, and errors that say
// what to fix. The reconciler and package stripe share it.
package providerapi

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookledger/hookledger/internal/fallback"
)

// Client calls one provider's REST API. Throttling follows the providers'
// documented rules (GitHub: "Best practices for using the REST API";
// Stripe: rate limits): a Retry-After is honoured in full; an answer with
// x-ratelimit-remaining 0 waits until x-ratelimit-reset; a rate limit with
// neither waits at least RateLimitMin plus jitter, doubling. A wait past
// the context's deadline is not shortened: the call stops with an APIError
// saying when to try again.
type Client struct {
	Provider string
	Base     string // scheme://host[/prefix], no trailing slash
	HTTP     *http.Client
	Header   http.Header // sent with every request (auth, accept, version)
	Retries  int         // attempts after the first for 429, 5xx and transport errors (0: DefaultRetries)
	Backoff  time.Duration
	// RateLimitMin is the least wait after a rate-limit answer that carries
	// no Retry-After or reset time (GitHub: 60 s); 0: Backoff.
	RateLimitMin time.Duration
	// Serial makes one request at a time (GitHub asks for serial requests),
	// and MutationGap is kept between two requests that change something
	// (GitHub: at least one second between POSTs).
	Serial      chan struct{}
	MutationGap time.Duration
	UserAgent   string // sent with every request
	// Hints say in an error what to fix on a 401, 403 or 404.
	Hints Hints

	// Now, Sleep and Jitter are the clock, the pause and the randomness
	// (tests inject them; nil: real time and math/rand).
	Now    func() time.Time
	Sleep  func(ctx context.Context, d time.Duration) error
	Jitter func(max time.Duration) time.Duration

	mu           sync.Mutex
	notBefore    time.Time // an answer said the quota is spent until then
	lastMutation time.Time
}

// APIError is a provider API's refusal.
type APIError struct {
	Provider string
	Status   int
	Message  string // the provider's own message, when it sent one
	URL      string
	// RateLimited says the API throttled the request; RetryAt is when it
	// said to try again (zero: not said), and PastDeadline that this was
	// after the run's deadline, so the call stopped instead of waiting.
	RateLimited  bool
	RetryAt      time.Time
	PastDeadline bool
	// Hint says what to fix (the client's Hints for the status).
	Hint string
}

func (e *APIError) Error() string {
	hint := ""
	switch {
	case e.RateLimited:
		hint = ": rate limited"
		if !e.RetryAt.IsZero() {
			hint += " until " + e.RetryAt.UTC().Format(time.RFC3339)
		}
		if e.PastDeadline {
			hint += ", past this run's deadline: stopped instead of retrying early; the next run (or a run after that time) continues"
		} else {
			hint += " after every retry; run again later, or lower the run's request rate (a shorter window, fewer sources per run)"
		}
	case e.Hint != "":
		hint = ": " + e.Hint
	}
	msg := ""
	if e.Message != "" {
		msg = " (" + e.Message + ")"
	}
	return fmt.Sprintf("%s API %s answered %d%s%s", e.Provider, e.URL, e.Status, msg, hint)
}

// maxPage bounds one API answer.
const maxPage = 16 << 20

// Stripe's API v2, as the thin events' fetcher and the reconciler call it.
const (
	// StripeAPIVersion is the Stripe-Version sent unless told otherwise (that
	// of Stripe's Go library this was written against): the answers' shape.
	StripeAPIVersion = "2026-07-29.dahlia"
	StripeThinObject = "v2.core.event" // a thin event's "object" (a snapshot event's is "event")
)

// DefaultRetries is how often a request is retried after a 429, a 5xx or a transport error.
const DefaultRetries = 4

// Hints are what an APIError says to fix, by status.
type Hints struct {
	Unauthorized, Forbidden, NotFound string
}

// Get fetches path (absolute URL, or relative to Base) and decodes the JSON
// answer into out. It returns the response headers (for Link).
func (c *Client) Get(ctx context.Context, path string, out any) (http.Header, error) {
	return c.Call(ctx, http.MethodGet, path, out)
}

func (c *Client) clock() time.Time { return fallback.Now(c.Now) }

func (c *Client) pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	return fallback.Sleep(ctx, d, c.Sleep)
}

func (c *Client) spread(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	if c.Jitter != nil {
		return c.Jitter(d)
	}
	return rand.N(d)
}

// pastDeadline says whether waiting d would end after ctx's deadline.
func (c *Client) pastDeadline(ctx context.Context, d time.Duration) bool {
	dl, ok := ctx.Deadline()
	return ok && c.clock().Add(d).After(dl)
}

// waitQuota waits until a spent quota is back, or stops past the deadline.
func (c *Client) waitQuota(ctx context.Context, u string) error {
	c.mu.Lock()
	until := c.notBefore
	c.mu.Unlock()
	d := until.Sub(c.clock())
	if d <= 0 {
		return nil
	}
	if c.pastDeadline(ctx, d) {
		return &APIError{Provider: c.Provider, Status: http.StatusTooManyRequests, Message: "x-ratelimit-remaining is 0", URL: RedactURL(u),
			RateLimited: true, RetryAt: until, PastDeadline: true}
	}
	return c.pause(ctx, d)
}

// waitMutation keeps mutationGap since the last mutating request.
func (c *Client) waitMutation(ctx context.Context) error {
	c.mu.Lock()
	last := c.lastMutation
	c.mu.Unlock()
	if c.MutationGap <= 0 || last.IsZero() {
		return nil
	}
	return c.pause(ctx, last.Add(c.MutationGap).Sub(c.clock()))
}

// Call makes one request (path as for Get), decoding a JSON answer into out.
func (c *Client) Call(ctx context.Context, method, path string, out any) (http.Header, error) {
	return c.Request(ctx, method, path, nil, out)
}

// Request is Call with headers of this request only (beside Header).
func (c *Client) Request(ctx context.Context, method, path string, extra http.Header, out any) (http.Header, error) {
	u := path
	if !strings.HasPrefix(path, "http://") && !strings.HasPrefix(path, "https://") {
		u = c.Base + path
	}
	if c.Serial != nil {
		select {
		case c.Serial <- struct{}{}:
			defer func() { <-c.Serial }()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	mutation := method != http.MethodGet && method != http.MethodHead
	b := retrying{wait: fallback.Positive(c.Backoff, time.Second)}
	b.limit = max(c.RateLimitMin, b.wait)
	retries := fallback.Positive(c.Retries, DefaultRetries)
	for attempt := 0; ; attempt++ {
		req, err := c.prepare(ctx, method, u, extra, mutation)
		if err != nil {
			return nil, err
		}
		resp, err := c.HTTP.Do(req)
		if mutation {
			c.mu.Lock()
			c.lastMutation = c.clock()
			c.mu.Unlock()
		}
		last := attempt >= retries
		d := b.wait
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil && last:
			return nil, fmt.Errorf("%s API %s: %w", c.Provider, RedactURL(u), err)
		case err != nil:
			b.wait *= 2
		default:
			hdr, again, err := c.answer(ctx, resp, u, out, last, &b)
			if !again {
				return hdr, err
			}
			d = b.next
		}
		if err := c.pause(ctx, d); err != nil {
			return nil, err
		}
	}
}

// retrying is one request's backoff: the doubling waits after errors and
// after rate limits that name no time, and the next wait answer chose.
type retrying struct {
	wait, limit, next time.Duration
}

// prepare waits for the request's turn (quota, gap between mutations) and builds it.
func (c *Client) prepare(ctx context.Context, method, u string, extra http.Header, mutation bool) (*http.Request, error) {
	if err := c.waitQuota(ctx, u); err != nil {
		return nil, err
	}
	if mutation {
		if err := c.waitMutation(ctx); err != nil {
			return nil, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%s API: %w", c.Provider, err)
	}
	for k, vs := range c.Header {
		req.Header[k] = vs
	}
	for k, vs := range extra {
		req.Header[k] = vs
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	return req, nil
}

// answer decodes a 2xx into out; a throttle, 5xx or failed read is retried
// (again, after b.next) until the last attempt; the rest are APIErrors.
func (c *Client) answer(ctx context.Context, resp *http.Response, u string, out any, last bool, b *retrying) (hdr http.Header, again bool, err error) {
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxPage+1))
	resp.Body.Close()
	t := c.throttle(resp, body)
	if t.spentUntil.After(c.clock()) {
		// The quota is spent (even on a successful answer): the next
		// request waits for the reset.
		c.mu.Lock()
		if t.spentUntil.After(c.notBefore) {
			c.notBefore = t.spentUntil
		}
		c.mu.Unlock()
	}
	switch {
	case rerr != nil:
		if last {
			return nil, false, fmt.Errorf("%s API %s: read answer: %w", c.Provider, RedactURL(u), rerr)
		}
		b.next, b.wait = b.wait, b.wait*2
		return nil, true, nil
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		if len(body) > maxPage {
			return nil, false, fmt.Errorf("%s API %s: answer over %d bytes", c.Provider, RedactURL(u), maxPage)
		}
		if out != nil && len(body) > 0 {
			if err := json.Unmarshal(body, out); err != nil {
				return nil, false, fmt.Errorf("%s API %s: unexpected answer: %w", c.Provider, RedactURL(u), err)
			}
		}
		return resp.Header, false, nil
	case t.limited || t.retryAfter > 0 || resp.StatusCode >= 500:
		if err := c.backOff(ctx, resp.StatusCode, body, t, u, last, b); err != nil {
			return nil, false, err
		}
		return nil, true, nil
	}
	return nil, false, &APIError{Provider: c.Provider, Status: resp.StatusCode, Message: apiMessage(body), URL: RedactURL(u), Hint: c.hint(resp.StatusCode)}
}

// backOff sets b.next for a throttle or a 5xx: a Retry-After in full, the
// quota's reset (waitQuota waits for it), or at least b.limit plus jitter,
// doubling. It returns the APIError after the last attempt, or when the
// wait would end past the context's deadline.
func (c *Client) backOff(ctx context.Context, status int, body []byte, t throttling, u string, last bool, b *retrying) error {
	apiErr := &APIError{Provider: c.Provider, Status: status, Message: apiMessage(body), URL: RedactURL(u), RateLimited: t.limited}
	d := b.wait
	switch {
	case t.retryAfter > 0:
		d = t.retryAfter // in full, never shortened
		apiErr.RetryAt = c.clock().Add(d)
	case !t.spentUntil.IsZero():
		d = 0 // waitQuota waits for the reset
		apiErr.RetryAt = t.spentUntil
	case t.limited:
		d = b.limit + c.spread(b.limit/2)
		b.limit *= 2
	default:
		b.wait *= 2
	}
	b.next = d
	if last {
		return apiErr
	}
	if t.limited || t.retryAfter > 0 {
		left := d
		if !t.spentUntil.IsZero() && t.retryAfter == 0 {
			left = t.spentUntil.Sub(c.clock())
		}
		if c.pastDeadline(ctx, left) {
			apiErr.PastDeadline = true
			if apiErr.RetryAt.IsZero() {
				apiErr.RetryAt = c.clock().Add(left)
			}
			return apiErr
		}
	}
	return nil
}

// throttling is what an answer says about the rate limit.
type throttling struct {
	limited    bool          // a 429, or a 403 that is about a rate limit
	retryAfter time.Duration // Retry-After, when sent
	spentUntil time.Time     // x-ratelimit-remaining 0: x-ratelimit-reset
}

// throttle reads an answer's rate-limit signals: Retry-After (429, 403 and
// 503), x-ratelimit-remaining 0 with x-ratelimit-reset, and GitHub's 403 or
// 429 whose message says "rate limit" with no header at all (a secondary
// limit). A 403 that says none of this is a permission refusal.
func (c *Client) throttle(resp *http.Response, body []byte) throttling {
	var t throttling
	code := resp.StatusCode
	if v := resp.Header.Get("Retry-After"); v != "" && (code == http.StatusTooManyRequests || code == http.StatusForbidden || code == http.StatusServiceUnavailable) {
		// "now" is still a throttle, retried at once.
		t.retryAfter = fallback.Positive(ParseRetryAfter(v, c.clock()), time.Millisecond)
	}
	spent := resp.Header.Get("X-RateLimit-Remaining") == "0"
	switch {
	case code == http.StatusTooManyRequests:
		t.limited = true
	case code == http.StatusForbidden:
		t.limited = spent || t.retryAfter > 0 || strings.Contains(strings.ToLower(apiMessage(body)), "rate limit")
	}
	// The quota is spent, on a refusal or on the answer that used the last
	// request: nothing more until x-ratelimit-reset (epoch seconds).
	if spent && (t.limited || code >= 200 && code < 300) {
		if n, err := strconv.ParseInt(strings.TrimSpace(resp.Header.Get("X-RateLimit-Reset")), 10, 64); err == nil {
			t.spentUntil = time.Unix(n, 0).Add(time.Second) // the reset second itself may still be spent
		}
	}
	return t
}

// ParseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return t.Sub(now)
	}
	return 0
}

// apiMessage picks the message out of Stripe's {"error":{"message"}} or GitHub's {"message"}.
func apiMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
		Error   struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	m := cmp.Or(e.Error.Message, e.Message)
	if len(m) > 300 {
		m = m[:300] + "..."
	}
	return m
}

// RedactURL drops the query string (cursors, never secrets) from logs.
func RedactURL(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}

// hint is the client's hint for status.
func (c *Client) hint(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return c.Hints.Unauthorized
	case http.StatusForbidden:
		return c.Hints.Forbidden
	case http.StatusNotFound:
		return c.Hints.NotFound
	}
	return ""
}

// Loopback reports whether host is localhost or a loopback address: a host
// an API credential may go to over plain http (tests and local stubs).
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
