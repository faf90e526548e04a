package providerstub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookledger/hookledger/webhook"
)

// Stripe's thin events (API v2), as documented for event destinations and
// the v2 Events API (shapes: lab/docs/proofs.md):
//
//   - the notification delivered to a webhook endpoint or an EventBridge
//     partner event bus: id, object "v2.core.event", type, created (RFC
//     3339), livemode, context (the connected account, when there is one),
//     related_object {id, type, url}; signed with Stripe-Signature over
//     HTTP like every Stripe event;
//   - GET /v2/core/events/{id}: the event with its data;
//   - GET /v2/core/events: created[gt|gte|lt|lte] (Unix seconds),
//     types[N], object_id, limit, page; {data, next_page_url,
//     previous_page_url}, newest first, 30 days back;
//   - GET related_object.url: the object as it is now.
//
// A request for an event or object of a connected account must name it in
// Stripe-Context, as a platform's key does; without it the account's own
// data is searched and the answer is 404.

// thinEvent is one v2 event.
type thinEvent struct {
	id, typ, context string
	created          time.Time
	seq              int
	related          RelatedObject
	data             json.RawMessage
}

// RelatedObject is a thin event's reference to the object that changed:
// Path is the API path that returns it (related_object.url).
type RelatedObject struct {
	ID, Type, Path string
}

type thinJSON struct {
	ID       string `json:"id"`
	Object   string `json:"object"`
	Type     string `json:"type"`
	Created  string `json:"created"`
	Livemode bool   `json:"livemode"`
	Context  string `json:"context,omitempty"`
	Related  *struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		URL  string `json:"url"`
	} `json:"related_object,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

func (e *thinEvent) render(withData bool) thinJSON {
	j := thinJSON{ID: e.id, Object: "v2.core.event", Type: e.typ, Created: e.created.UTC().Format("2006-01-02T15:04:05.000Z"), Context: e.context}
	if e.related.Path != "" {
		j.Related = &struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			URL  string `json:"url"`
		}{e.related.ID, e.related.Type, e.related.Path}
	}
	if withData {
		j.Data = e.data
	}
	return j
}

// ThinEvent creates a thin event of type typ about related, whose current
// state is object (stored at related.Path, replacing an earlier state), on
// account's behalf (a connected account, "" for the account's own), and
// returns its id and the notification as Stripe delivers it.
func (s *Stripe) ThinEvent(typ, account string, related RelatedObject, object json.RawMessage) (id string, notification []byte, err error) {
	if !json.Valid(object) {
		return "", nil, fmt.Errorf("stripe stub: object is not JSON")
	}
	if !strings.HasPrefix(related.Path, "/v1/") && !strings.HasPrefix(related.Path, "/v2/") {
		return "", nil, fmt.Errorf("stripe stub: related object path %q is not an API path", related.Path)
	}
	s.sender.mu.Lock()
	defer s.sender.mu.Unlock()
	s.seq++
	ev := &thinEvent{id: randomID("evt_test_", 28), typ: typ, context: account, created: s.now(), seq: s.seq, related: related,
		data: json.RawMessage(`{"reason":"stub"}`)}
	s.thin[ev.id] = ev
	s.thinOrder = append(s.thinOrder, ev)
	s.objects[related.Path] = storedObject{account: account, body: object}
	n, _ := json.Marshal(ev.render(false))
	return ev.id, n, nil
}

// DeliverThin posts a thin event's notification to the endpoint, signed as
// Stripe signs, and says whether it answered 2xx.
func (s *Stripe) DeliverThin(ctx context.Context, id string) (bool, error) {
	s.sender.mu.Lock()
	ev, ok := s.thin[id]
	var body []byte
	if ok {
		body, _ = json.Marshal(ev.render(false))
	}
	s.sender.mu.Unlock()
	if !ok {
		return false, fmt.Errorf("stripe stub: no thin event %s", id)
	}
	_, secret, _ := s.endpoint()
	v, _ := webhook.New(webhook.Config{Provider: "stripe"})
	hdr, err := v.Sign(webhook.Message{Body: body, Now: s.now()}, secret)
	if err != nil {
		return false, err
	}
	return s.post(ctx, hdr, body).ok(), nil
}

// Fetches returns how many API requests for path were answered 200.
func (s *Stripe) Fetches(path string) int {
	s.sender.mu.Lock()
	defer s.sender.mu.Unlock()
	return s.fetches[path]
}

// ThrottleNext makes the next n API requests answer 429, as Stripe's rate
// limiter does (no Retry-After).
func (s *Stripe) ThrottleNext(n int) {
	s.sender.mu.Lock()
	s.throttle = n
	s.sender.mu.Unlock()
}

type storedObject struct {
	account string
	body    json.RawMessage
}

// v2Error writes the v2 API's error shape.
func v2Error(w http.ResponseWriter, status int, typ, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"type": typ, "code": code, "message": msg}})
}

var v2EventPath = regexp.MustCompile(`^/v2/core/events/([A-Za-z0-9_]+)$`)

// serveAPI answers the thin-event side of the API: v2 events and the
// objects they point at. It reports false for a path it does not serve.
func (s *Stripe) serveAPI(w http.ResponseWriter, r *http.Request) bool {
	path := r.URL.Path
	s.sender.mu.Lock()
	_, isObject := s.objects[path]
	s.sender.mu.Unlock()
	if path != "/v2/core/events" && !v2EventPath.MatchString(path) && !isObject {
		return false
	}
	if r.Method != http.MethodGet {
		v2Error(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "Unrecognized request URL ("+r.Method+": "+path+").")
		return true
	}
	if strings.HasPrefix(path, "/v2/") && r.Header.Get("Stripe-Version") == "" {
		v2Error(w, http.StatusBadRequest, "invalid_request_error", "missing_version", "API v2 requests need a Stripe-Version header.")
		return true
	}
	s.sender.mu.Lock()
	if s.throttle > 0 {
		s.throttle--
		s.sender.mu.Unlock()
		v2Error(w, http.StatusTooManyRequests, "rate_limit", "rate_limit", "Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.")
		return true
	}
	s.sender.mu.Unlock()
	account := r.Header.Get("Stripe-Context")
	switch {
	case path == "/v2/core/events":
		s.listThin(w, r.URL.Query(), account)
	case isObject:
		s.sender.mu.Lock()
		o := s.objects[path]
		if o.account == account {
			s.fetches[path]++
		}
		s.sender.mu.Unlock()
		if o.account != account {
			stripeError(w, http.StatusNotFound, "invalid_request_error", "id", "No such object: "+path)
			return true
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(o.body)
	default:
		id := v2EventPath.FindStringSubmatch(path)[1]
		s.sender.mu.Lock()
		ev, ok := s.thin[id]
		if ok && ev.context == account {
			s.fetches[path]++
		}
		s.sender.mu.Unlock()
		if !ok || ev.context != account {
			v2Error(w, http.StatusNotFound, "invalid_request_error", "resource_missing", "No such event: "+id)
			return true
		}
		writeJSON(w, http.StatusOK, ev.render(true))
	}
	return true
}

// listThin implements the v2 List Events: newest first, 30 days back, the
// created range, types, object_id and pages of limit (default 20).
func (s *Stripe) listThin(w http.ResponseWriter, q url.Values, account string) {
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			v2Error(w, http.StatusBadRequest, "invalid_request_error", "invalid_limit", "limit must be between 1 and 100")
			return
		}
		limit = n
	}
	var bounds []func(int64) bool
	var types []string
	for k, vs := range q {
		switch {
		case strings.HasPrefix(k, "created"):
			n, err := strconv.ParseInt(vs[0], 10, 64)
			if err != nil {
				v2Error(w, http.StatusBadRequest, "invalid_request_error", "invalid_created", "Invalid integer: "+vs[0])
				return
			}
			switch k {
			case "created[gt]":
				bounds = append(bounds, func(c int64) bool { return c > n })
			case "created[gte]":
				bounds = append(bounds, func(c int64) bool { return c >= n })
			case "created[lt]":
				bounds = append(bounds, func(c int64) bool { return c < n })
			case "created[lte]":
				bounds = append(bounds, func(c int64) bool { return c <= n })
			default:
				v2Error(w, http.StatusBadRequest, "invalid_request_error", "unknown_parameter", "Received unknown parameter: "+k)
				return
			}
		case typesParam.MatchString(k):
			types = append(types, vs...)
		case k == "limit", k == "page", k == "object_id":
		default:
			v2Error(w, http.StatusBadRequest, "invalid_request_error", "unknown_parameter", "Received unknown parameter: "+k)
			return
		}
	}
	if len(types) > 20 {
		v2Error(w, http.StatusBadRequest, "invalid_request_error", "invalid_types", "types can have at most 20 entries")
		return
	}
	start := 0
	if p := q.Get("page"); p != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(p, "page_"))
		if err != nil || n < 0 {
			v2Error(w, http.StatusBadRequest, "invalid_request_error", "invalid_page", "Invalid page token")
			return
		}
		start = n
	}
	s.sender.mu.Lock()
	defer s.sender.mu.Unlock()
	oldest := s.now().Add(-30 * 24 * time.Hour)
	var match []*thinEvent
	for _, e := range s.thinOrder {
		if e.created.Before(oldest) || e.context != account {
			continue
		}
		if len(types) > 0 && !slices.Contains(types, e.typ) {
			continue
		}
		if id := q.Get("object_id"); id != "" && e.related.ID != id {
			continue
		}
		ok := true
		for _, b := range bounds {
			ok = ok && b(e.created.Unix())
		}
		if ok {
			match = append(match, e)
		}
	}
	slices.SortFunc(match, func(a, b *thinEvent) int { return b.seq - a.seq }) // newest first
	page := []thinJSON{}
	for i := start; i < len(match) && i < start+limit; i++ {
		page = append(page, match[i].render(true))
	}
	var next *string
	if start+limit < len(match) {
		nq := url.Values{}
		for k, vs := range q {
			if k != "page" {
				nq[k] = vs
			}
		}
		nq.Set("page", "page_"+strconv.Itoa(start+limit))
		u := "/v2/core/events?" + nq.Encode()
		next = &u
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": page, "next_page_url": next, "previous_page_url": nil})
}
