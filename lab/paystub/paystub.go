// Package paystub is a small local payments and notifications API for demos
// and tests.
//
// Charges honour Idempotency-Key the way payment providers do, so a re-run
// of an effect with the same key returns the first charge instead of making
// a second one. Notifications have no idempotency at all, like many e-mail
// and SMS APIs: every POST sends one; a caller can only look them up
// afterwards by the reference it attached. The stub counts every request per
// key and per event, which makes it the independent oracle of the demo and
// the chaos harness: a webhook event was charged once exactly when one
// charge carries its key, and notified once exactly when one notification
// carries its reference.
package paystub

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Charge is one recorded charge.
type Charge struct {
	ID             string    `json:"id"`
	Amount         int64     `json:"amount"`
	Currency       string    `json:"currency"`
	Customer       string    `json:"customer,omitempty"`
	Event          string    `json:"event,omitempty"`
	Account        string    `json:"account,omitempty"`
	IdempotencyKey string    `json:"idempotency_key"`
	Created        time.Time `json:"created"`
}

// Notification is one notification sent.
type Notification struct {
	ID        string    `json:"id"`
	To        string    `json:"to"`
	Text      string    `json:"text"`
	Reference string    `json:"reference,omitempty"`
	Event     string    `json:"event,omitempty"`
	Created   time.Time `json:"created"`
}

// NotificationRequest is the body of POST /v1/notifications.
type NotificationRequest struct {
	To        string `json:"to"`
	Text      string `json:"text"`
	Reference string `json:"reference,omitempty"` // the caller's own reference, searchable afterwards
	Event     string `json:"event,omitempty"`     // the webhook event it is for (for the oracle)
}

// ChargeRequest is the body of POST /v1/charges.
type ChargeRequest struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Customer string `json:"customer,omitempty"`
	Event    string `json:"event,omitempty"`   // the webhook event this charge is for (for the oracle)
	Account  string `json:"account,omitempty"` // the tenant's account the charge is made on
}

// Stats is what GET /v1/stats returns.
type Stats struct {
	Charges  int            `json:"charges"`  // distinct charges made
	Requests int            `json:"requests"` // charge requests received, replays included
	Replays  int            `json:"replays"`  // requests answered from an earlier charge
	PerEvent map[string]int `json:"per_event"`
	// Notifications sent, and per event.
	Notifications  int            `json:"notifications"`
	NotifiedEvents map[string]int `json:"notified_per_event"`
	// Refused counts, per event, the charge requests a Failure refused.
	Refused map[string]int `json:"refused_per_event"`
}

// Failure makes the stub refuse a customer's new charges with Status: the
// first Times requests, or every one when Times is 0. A 5xx is retried by
// the lab's effect; a 4xx is permanent (the card declined).
type Failure struct {
	Status int
	Times  int
}

// Server is the stub. Use New; serve it with net/http.
type Server struct {
	mu       sync.Mutex
	byKey    map[string]*entry
	charges  []*Charge
	requests int
	replays  int
	// FailEvery makes every n-th new charge request fail with 500 before
	// charging, to exercise retries (0: never).
	FailEvery int
	news      int

	failures map[string]Failure // by customer
	refused  map[string]int     // refused requests by customer
	refusals map[string]int     // refused requests by event

	notes  []*Notification
	keyLog map[string][]time.Time // charge requests per idempotency key
}

type entry struct {
	charge *Charge
	req    ChargeRequest
}

// New returns an empty stub.
func New() *Server {
	return &Server{byKey: map[string]*entry{}, keyLog: map[string][]time.Time{},
		failures: map[string]Failure{}, refused: map[string]int{}, refusals: map[string]int{}}
}

// Fail refuses the customer's new charges as f says, from now on.
func (s *Server) Fail(customer string, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[customer] = f
}

// ServeHTTP routes the stub's API:
//
//	POST /v1/charges                  create (Idempotency-Key required)
//	GET  /v1/charges                  list
//	GET  /v1/charges?idempotency_key=K  the charge made with K, or 404
//	POST /v1/notifications            send one (no idempotency: every call sends)
//	GET  /v1/notifications?reference=R  the notifications sent with reference R
//	GET  /v1/stats                    Stats
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v1/notifications" && r.Method == http.MethodPost:
		s.notify(w, r)
	case r.URL.Path == "/v1/notifications" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, s.Notifications(r.URL.Query().Get("reference")))
	case r.URL.Path == "/v1/charges" && r.Method == http.MethodPost:
		s.create(w, r)
	case r.URL.Path == "/v1/charges" && r.Method == http.MethodGet:
		if k := r.URL.Query().Get("idempotency_key"); k != "" {
			s.mu.Lock()
			e := s.byKey[k]
			s.mu.Unlock()
			if e == nil {
				writeJSON(w, http.StatusNotFound, map[string]string{"error": "no charge with that idempotency key"})
				return
			}
			writeJSON(w, http.StatusOK, e.charge)
			return
		}
		writeJSON(w, http.StatusOK, s.Charges())
	case r.URL.Path == "/v1/stats" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, s.Stats())
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such route; see POST /v1/charges, GET /v1/charges, GET /v1/stats"})
	}
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" || len(key) > 255 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Idempotency-Key header required (1-255 characters)"})
		return
	}
	var req ChargeRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Amount <= 0 || req.Currency == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body must be JSON with a positive amount and a currency"})
		return
	}
	req.Currency = strings.ToLower(req.Currency)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	s.keyLog[key] = append(s.keyLog[key], time.Now().UTC())
	if e, ok := s.byKey[key]; ok {
		if e.req != req {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": "Idempotency-Key reused with different parameters"})
			return
		}
		s.replays++
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, http.StatusOK, e.charge)
		return
	}
	s.news++
	if s.FailEvery > 0 && s.news%s.FailEvery == 0 {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "injected failure; retry"})
		return
	}
	if f, ok := s.failures[req.Customer]; ok && (f.Times == 0 || s.refused[req.Customer] < f.Times) {
		s.refused[req.Customer]++
		s.refusals[req.Event]++
		writeJSON(w, f.Status, map[string]string{"error": fmt.Sprintf("customer %s refused (%d)", req.Customer, f.Status)})
		return
	}
	c := &Charge{ID: fmt.Sprintf("ch_%06d", len(s.charges)+1), Amount: req.Amount, Currency: req.Currency,
		Customer: req.Customer, Event: req.Event, Account: req.Account, IdempotencyKey: key, Created: time.Now().UTC()}
	s.charges = append(s.charges, c)
	s.byKey[key] = &entry{charge: c, req: req}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) notify(w http.ResponseWriter, r *http.Request) {
	var req NotificationRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.To == "" || req.Text == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body must be JSON with to and text"})
		return
	}
	s.mu.Lock()
	n := &Notification{ID: fmt.Sprintf("ntf_%06d", len(s.notes)+1), To: req.To, Text: req.Text, Reference: req.Reference,
		Event: req.Event, Created: time.Now().UTC()}
	s.notes = append(s.notes, n)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, n)
}

// Notifications returns the notifications sent with the reference (every
// one when it is empty), oldest first.
func (s *Server) Notifications(reference string) []Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []Notification{}
	for _, n := range s.notes {
		if reference == "" || n.Reference == reference {
			out = append(out, *n)
		}
	}
	return out
}

// ChargeRequestTimes returns when each charge request with the idempotency
// key arrived, replays included.
func (s *Server) ChargeRequestTimes(key string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.keyLog[key]...)
}

// Charges returns every charge made, oldest first.
func (s *Server) Charges() []Charge {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Charge, len(s.charges))
	for i, c := range s.charges {
		out[i] = *c
	}
	return out
}

// Stats summarises the stub's traffic.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Charges: len(s.charges), Requests: s.requests, Replays: s.replays, PerEvent: map[string]int{},
		Notifications: len(s.notes), NotifiedEvents: map[string]int{}, Refused: maps.Clone(s.refusals)}
	for _, c := range s.charges {
		st.PerEvent[c.Event]++
	}
	for _, n := range s.notes {
		st.NotifiedEvents[n.Event]++
	}
	return st
}

// Twice lists the events charged more than once (should be none).
func (st Stats) Twice() []string {
	var out []string
	for ev, n := range st.PerEvent {
		if n > 1 {
			out = append(out, ev)
		}
	}
	sort.Strings(out)
	return out
}

// NotifiedTwice lists the events notified more than once (should be none).
func (st Stats) NotifiedTwice() []string {
	var out []string
	for ev, n := range st.NotifiedEvents {
		if n > 1 {
			out = append(out, ev)
		}
	}
	sort.Strings(out)
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
