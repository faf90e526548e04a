package local

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHealthz(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	(&Pipeline{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != 200 || rec.Body.String() != "ok\n" {
		t.Fatalf("healthz: %d %q", rec.Code, rec.Body.String())
	}
}

// TestRunRefusesBadSettings: a tick, timeout or poller count that is not
// positive is an error from Run, not a panic in time.NewTicker, a deadline
// already past, or a silent correction; and Run serves nothing.
func TestRunRefusesBadSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pollers        int
		timeout, every time.Duration
		want           string
	}{
		{2, time.Second, 0, "reclaimer interval"},
		{2, time.Second, -time.Second, "reclaimer interval"},
		{2, 0, time.Second, "function timeout"},
		{2, -time.Second, time.Second, "function timeout"},
		{0, time.Second, time.Second, "pollers"},
		{-3, time.Second, time.Second, "pollers"},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		err = (&Pipeline{}).Run(t.Context(), ln, tc.pollers, tc.timeout, tc.every)
		ln.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(pollers %d, timeout %v, every %v): %v; want an error about the %s", tc.pollers, tc.timeout, tc.every, err, tc.want)
		}
	}
}
