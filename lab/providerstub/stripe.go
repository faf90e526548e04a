package providerstub

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hookledger/hookledger/webhook"
)

// Stripe plays Stripe: an account whose events go to one webhook endpoint,
// and the List Events API.
type Stripe struct {
	sender
	key string

	// APIVersion is the version events are rendered in (default
	// "2025-06-30.basil").
	APIVersion string
	// EnabledEvents are the types the endpoint subscribes to (nil: all).
	// Other events are created in the account and listed, but not sent.
	EnabledEvents []string

	events []*stripeEvent // in creation order
	byID   map[string]*stripeEvent
	seq    int

	// Thin events (thin.go): by id and in creation order, the objects
	// they point at by API path, the 200 answers per path, and how many
	// requests are still to be throttled.
	thin      map[string]*thinEvent
	thinOrder []*thinEvent
	objects   map[string]storedObject
	fetches   map[string]int
	throttle  int
}

// stripeEvent is one event and its delivery state for the endpoint.
type stripeEvent struct {
	id         string
	typ        string
	created    int64
	apiVersion string
	object     json.RawMessage
	seq        int  // creation order, the tie-break within one second
	subscribed bool // the endpoint subscribes to its type
	delivered  bool // the endpoint answered 2xx to an attempt
	attempts   int
}

// stripeEventJSON is an Event as the API and the webhook render it, fields
// in the documented order.
type stripeEventJSON struct {
	ID         string `json:"id"`
	Object     string `json:"object"`
	APIVersion string `json:"api_version"`
	Created    int64  `json:"created"`
	Data       struct {
		Object json.RawMessage `json:"object"`
	} `json:"data"`
	Livemode        bool `json:"livemode"`
	PendingWebhooks int  `json:"pending_webhooks"`
	Request         struct {
		ID             *string `json:"id"`
		IdempotencyKey *string `json:"idempotency_key"`
	} `json:"request"`
	Type string `json:"type"`
}

func (e *stripeEvent) pending() int {
	if e.subscribed && !e.delivered {
		return 1
	}
	return 0
}

func (e *stripeEvent) render() stripeEventJSON {
	var j stripeEventJSON
	j.ID, j.Object, j.APIVersion, j.Created, j.Type = e.id, "event", e.apiVersion, e.created, e.typ
	j.Data.Object = e.object
	j.PendingWebhooks = e.pending()
	return j
}

const idChars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func randomID(prefix string, n int) string {
	var b strings.Builder
	b.WriteString(prefix)
	for range n {
		i, _ := rand.Int(rand.Reader, big.NewInt(int64(len(idChars))))
		b.WriteByte(idChars[i.Int64()])
	}
	return b.String()
}

// Emit creates an event of type typ about object (a JSON object) and, when
// the endpoint subscribes to the type, delivers it once. It returns the
// event id and whether the endpoint answered 2xx.
func (s *Stripe) Emit(ctx context.Context, typ string, object json.RawMessage) (id string, delivered bool, err error) {
	if !json.Valid(object) {
		return "", false, fmt.Errorf("stripe stub: object is not JSON")
	}
	s.sender.mu.Lock()
	s.seq++
	ev := &stripeEvent{id: randomID("evt_", 24), typ: typ, created: s.now().Unix(), apiVersion: s.APIVersion, object: object, seq: s.seq}
	if ev.apiVersion == "" {
		ev.apiVersion = "2025-06-30.basil"
	}
	ev.subscribed = s.EnabledEvents == nil || slices.Contains(s.EnabledEvents, typ)
	s.events = append(s.events, ev)
	s.byID[ev.id] = ev
	s.sender.mu.Unlock()
	if !ev.subscribed {
		return ev.id, false, nil
	}
	return ev.id, s.deliver(ctx, ev), nil
}

// deliver makes one attempt for ev.
func (s *Stripe) deliver(ctx context.Context, ev *stripeEvent) bool {
	s.sender.mu.Lock()
	body, _ := json.Marshal(ev.render())
	ev.attempts++
	s.sender.mu.Unlock()
	_, secret, _ := s.endpoint()
	v, _ := webhook.New(webhook.Config{Provider: "stripe"})
	hdr, err := v.Sign(webhook.Message{Body: body, Now: s.now()}, secret)
	if err != nil {
		return false
	}
	hdr.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	ok := s.post(ctx, hdr, body).ok()
	if ok {
		s.sender.mu.Lock()
		ev.delivered = true
		s.sender.mu.Unlock()
	}
	return ok
}

// Retry attempts every subscribed event not yet delivered once more, as
// Stripe's automatic retries do, and returns how many got through.
func (s *Stripe) Retry(ctx context.Context) int {
	s.sender.mu.Lock()
	var due []*stripeEvent
	for _, e := range s.events {
		if e.subscribed && !e.delivered {
			due = append(due, e)
		}
	}
	s.sender.mu.Unlock()
	n := 0
	for _, e := range due {
		if s.deliver(ctx, e) {
			n++
		}
	}
	return n
}

// Undelivered lists the ids of subscribed events the endpoint never
// answered 2xx.
func (s *Stripe) Undelivered() []string {
	s.sender.mu.Lock()
	defer s.sender.mu.Unlock()
	var out []string
	for _, e := range s.events {
		if e.subscribed && !e.delivered {
			out = append(out, e.id)
		}
	}
	return out
}

// stripeError writes Stripe's error shape.
func stripeError(w http.ResponseWriter, status int, typ, param, msg string) {
	e := map[string]string{"type": typ, "message": msg}
	if param != "" {
		e["param"] = param
	}
	writeJSON(w, status, map[string]any{"error": e})
}

// ServeHTTP serves GET /v1/events, and the thin events' API (thin.go).
func (s *Stripe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := bearer(r)
	if key == "" {
		stripeError(w, http.StatusUnauthorized, "invalid_request_error", "",
			"You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').")
		return
	}
	if key != s.key {
		stripeError(w, http.StatusUnauthorized, "invalid_request_error", "", "Invalid API Key provided: "+redact(key))
		return
	}
	if s.serveAPI(w, r) {
		return
	}
	if r.URL.Path != "/v1/events" {
		stripeError(w, http.StatusNotFound, "invalid_request_error", "", "Unrecognized request URL ("+r.Method+": "+r.URL.Path+").")
		return
	}
	if r.Method != http.MethodGet {
		stripeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "Unrecognized request URL ("+r.Method+": /v1/events).")
		return
	}
	s.list(w, r.URL.Query())
}

func redact(key string) string {
	if len(key) <= 8 {
		return "****"
	}
	return key[:8] + "****" + key[len(key)-4:]
}

var typesParam = regexp.MustCompile(`^types\[\d*\]$`)

// list implements List Events: filter, order newest first (created, then
// creation order), page with starting_after / ending_before.
func (s *Stripe) list(w http.ResponseWriter, q url.Values) {
	limit := 10
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			stripeError(w, http.StatusBadRequest, "invalid_request_error", "limit", "Invalid integer: "+v+"; limit must be between 1 and 100")
			return
		}
		limit = n
	}
	after, before := q.Get("starting_after"), q.Get("ending_before")
	if after != "" && before != "" {
		stripeError(w, http.StatusBadRequest, "invalid_request_error", "ending_before", "You may only specify one of these parameters: ending_before, starting_after.")
		return
	}
	var bounds []func(int64) bool
	for k, vs := range q {
		op, ok := strings.CutPrefix(k, "created")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(vs[0], 10, 64)
		if err != nil {
			stripeError(w, http.StatusBadRequest, "invalid_request_error", k, "Invalid integer: "+vs[0])
			return
		}
		switch op {
		case "":
			bounds = append(bounds, func(c int64) bool { return c == n })
		case "[gt]":
			bounds = append(bounds, func(c int64) bool { return c > n })
		case "[gte]":
			bounds = append(bounds, func(c int64) bool { return c >= n })
		case "[lt]":
			bounds = append(bounds, func(c int64) bool { return c < n })
		case "[lte]":
			bounds = append(bounds, func(c int64) bool { return c <= n })
		default:
			stripeError(w, http.StatusBadRequest, "invalid_request_error", k, "Received unknown parameter: "+k)
			return
		}
	}
	var types []string
	for k, vs := range q {
		if typesParam.MatchString(k) {
			types = append(types, vs...)
		}
	}
	typ := q.Get("type")
	if typ != "" && len(types) > 0 {
		stripeError(w, http.StatusBadRequest, "invalid_request_error", "type", "You may only specify one of these parameters: type, types.")
		return
	}
	if len(types) > 20 {
		stripeError(w, http.StatusBadRequest, "invalid_request_error", "types", "types can have at most 20 entries")
		return
	}
	var success *bool
	if v := q.Get("delivery_success"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			stripeError(w, http.StatusBadRequest, "invalid_request_error", "delivery_success", "Invalid boolean: "+v)
			return
		}
		success = &b
	}

	s.sender.mu.Lock()
	defer s.sender.mu.Unlock()
	retention := s.now().Add(-30 * 24 * 3600 * 1e9).Unix() // List Events covers 30 days
	order := make([]*stripeEvent, 0, len(s.events))
	for _, e := range s.events {
		if e.created >= retention {
			order = append(order, e)
		}
	}
	slices.SortFunc(order, func(a, b *stripeEvent) int { // newest first
		if a.created != b.created {
			return int(b.created - a.created)
		}
		return b.seq - a.seq
	})
	match := func(e *stripeEvent) bool {
		for _, ok := range bounds {
			if !ok(e.created) {
				return false
			}
		}
		if typ != "" && !typeMatches(typ, e.typ) {
			return false
		}
		if len(types) > 0 && !slices.Contains(types, e.typ) {
			return false
		}
		if success != nil && *success != (e.pending() == 0) {
			return false
		}
		return true
	}
	pos := func(id, param string) (int, bool) {
		i := slices.IndexFunc(order, func(e *stripeEvent) bool { return e.id == id })
		if i < 0 {
			stripeError(w, http.StatusBadRequest, "invalid_request_error", param, fmt.Sprintf("No such event: '%s'", id))
			return 0, false
		}
		return i, true
	}
	var page []stripeEventJSON
	more := false
	switch {
	case before != "":
		i, ok := pos(before, "ending_before")
		if !ok {
			return
		}
		var newer []*stripeEvent // the matching events before i, nearest first
		for j := i - 1; j >= 0; j-- {
			if match(order[j]) {
				newer = append(newer, order[j])
			}
		}
		more = len(newer) > limit
		newer = newer[:min(limit, len(newer))]
		for j := len(newer) - 1; j >= 0; j-- {
			page = append(page, newer[j].render())
		}
	default:
		start := 0
		if after != "" {
			i, ok := pos(after, "starting_after")
			if !ok {
				return
			}
			start = i + 1
		}
		for _, e := range order[start:] {
			if !match(e) {
				continue
			}
			if len(page) == limit {
				more = true
				break
			}
			page = append(page, e.render())
		}
	}
	if page == nil {
		page = []stripeEventJSON{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "url": "/v1/events", "has_more": more, "data": page})
}

// typeMatches applies List Events' type filter, where "*" is a wildcard
// ("invoice.*").
func typeMatches(pattern, typ string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(typ, prefix)
	}
	return pattern == typ
}
