package paystub

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func charge(t *testing.T, s *Server, key, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/v1/charges", strings.NewReader(body))
	if key != "" {
		r.Header.Set("Idempotency-Key", key)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

func TestIdempotencyKeyChargesOnce(t *testing.T) {
	t.Parallel()
	s := New()
	body := `{"amount":4900,"currency":"usd","event":"evt_1"}`
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if w := charge(t, s, "k1", body); w.Code != 200 {
				t.Errorf("status %d", w.Code)
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	if st.Charges != 1 || st.Replays != 19 || st.PerEvent["evt_1"] != 1 || len(st.Twice()) != 0 {
		t.Fatalf("stats %+v", st)
	}
	if w := charge(t, s, "k1", `{"amount":1,"currency":"usd"}`); w.Code != http.StatusUnprocessableEntity {
		t.Errorf("reused key with other params: %d", w.Code)
	}
	charge(t, s, "k2", body) // a second key for the same event is a second charge
	if tw := s.Stats().Twice(); len(tw) != 1 || tw[0] != "evt_1" {
		t.Errorf("Twice() = %v", tw)
	}
}

func TestRejectsBadRequests(t *testing.T) {
	t.Parallel()
	s := New()
	for _, tc := range []struct{ key, body string }{
		{"", `{"amount":1,"currency":"usd"}`},
		{"k", `{"amount":0,"currency":"usd"}`},
		{"k", `{"amount":1}`},
		{"k", `not json`},
		{"k", `{"amount":1,"currency":"usd","extra":1}`},
	} {
		if w := charge(t, s, tc.key, tc.body); w.Code != http.StatusBadRequest {
			t.Errorf("%q %q: %d", tc.key, tc.body, w.Code)
		}
	}
	if s.Stats().Charges != 0 {
		t.Error("a bad request charged")
	}
}

func TestLookupByKey(t *testing.T) {
	t.Parallel()
	s := New()
	charge(t, s, "k1", `{"amount":5,"currency":"usd"}`)
	for key, want := range map[string]int{"k1": 200, "nope": 404} {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/charges?idempotency_key="+key, nil))
		if w.Code != want {
			t.Errorf("%s: %d, want %d", key, w.Code, want)
		}
	}
}

// TestFailRefusesACustomer: a customer's charges are refused as its Failure
// says (a number of times, or always), counted per event; others are not.
func TestFailRefusesACustomer(t *testing.T) {
	t.Parallel()
	s := New()
	s.Fail("cus_flaky", Failure{Status: http.StatusServiceUnavailable, Times: 2})
	s.Fail("cus_declined", Failure{Status: http.StatusBadRequest})
	for i, want := range []int{503, 503, 200, 200} {
		if w := charge(t, s, "kf", `{"amount":5,"currency":"usd","customer":"cus_flaky","event":"evt_f"}`); w.Code != want {
			t.Errorf("cus_flaky request %d: %d, want %d", i+1, w.Code, want)
		}
	}
	for i := range 3 {
		if w := charge(t, s, "kd", `{"amount":5,"currency":"usd","customer":"cus_declined","event":"evt_d"}`); w.Code != 400 {
			t.Errorf("cus_declined request %d: %d, want 400", i+1, w.Code)
		}
	}
	if w := charge(t, s, "ko", `{"amount":5,"currency":"usd","customer":"cus_other","event":"evt_o"}`); w.Code != 200 {
		t.Errorf("another customer: %d, want 200", w.Code)
	}
	st := s.Stats()
	if st.Refused["evt_f"] != 2 || st.Refused["evt_d"] != 3 || st.Refused["evt_o"] != 0 || st.PerEvent["evt_f"] != 1 || st.PerEvent["evt_d"] != 0 {
		t.Fatalf("refused %v, charged %v; want evt_f refused 2 then charged once, evt_d refused 3 and never charged", st.Refused, st.PerEvent)
	}
}
