// Package paystub is a small local payments API for demos and tests: it
// records charges and honours Idempotency-Key the way payment providers do,
// so a re-run of an effect with the same key returns the first charge
// instead of making a second one. It also counts every request it saw per
// key and per event, which makes it the independent oracle of the demo:
// a webhook event was charged once exactly when one charge carries its key.
package paystub

import (
	"encoding/json"
	"fmt"
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
	IdempotencyKey string    `json:"idempotency_key"`
	Created        time.Time `json:"created"`
}

// ChargeRequest is the body of POST /v1/charges.
type ChargeRequest struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Customer string `json:"customer,omitempty"`
	Event    string `json:"event,omitempty"` // the webhook event this charge is for (for the oracle)
}

// Stats is what GET /v1/stats returns.
type Stats struct {
	Charges  int            `json:"charges"`  // distinct charges made
	Requests int            `json:"requests"` // charge requests received, replays included
	Replays  int            `json:"replays"`  // requests answered from an earlier charge
	PerEvent map[string]int `json:"per_event"`
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
}

type entry struct {
	charge *Charge
	req    ChargeRequest
}

// New returns an empty stub.
func New() *Server { return &Server{byKey: map[string]*entry{}} }

// ServeHTTP routes the stub's API:
//
//	POST /v1/charges                  create (Idempotency-Key required)
//	GET  /v1/charges                  list
//	GET  /v1/charges?idempotency_key=K  the charge made with K, or 404
//	GET  /v1/stats                    Stats
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
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
	c := &Charge{ID: fmt.Sprintf("ch_%06d", len(s.charges)+1), Amount: req.Amount, Currency: req.Currency,
		Customer: req.Customer, Event: req.Event, IdempotencyKey: key, Created: time.Now().UTC()}
	s.charges = append(s.charges, c)
	s.byKey[key] = &entry{charge: c, req: req}
	writeJSON(w, http.StatusOK, c)
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
	st := Stats{Charges: len(s.charges), Requests: s.requests, Replays: s.replays, PerEvent: map[string]int{}}
	for _, c := range s.charges {
		st.PerEvent[c.Event]++
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

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
