package hookledger_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/hookledger/hookledger/hookledgertest"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookledger/hookledger"
)

// TestResponseError: each answer maps to done, retried or permanent, and
// the error names the request and the status but never the URL's query.
func TestResponseError(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 2000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var code int
		fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/status/"), &code)
		w.WriteHeader(code)
		if code == 400 {
			io.WriteString(w, long)
			return
		}
		io.WriteString(w, " answer \n")
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		code      int
		permanent bool
	}{
		{200, false}, {201, false}, {204, false},
		{408, false}, {409, false}, {425, false}, {429, false}, {500, false}, {502, false}, {503, false},
		{301, true}, {400, true}, {401, true}, {403, true}, {404, true}, {422, true},
	} {
		u := fmt.Sprintf("%s/status/%d?key=secret", srv.URL, tc.code)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, u, nil)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got := hookledger.ResponseError(resp)
		rest, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if tc.code < 300 {
			if got != nil || (tc.code != 204 && string(rest) != " answer \n") {
				t.Errorf("%d: %v, body left %q; want nil and the body unread", tc.code, got, rest)
			}
			continue
		}
		var he *hookledger.HTTPError
		if !errors.As(got, &he) || he.StatusCode != tc.code || he.Method != http.MethodPost || he.Path != fmt.Sprintf("/status/%d", tc.code) {
			t.Errorf("%d: %#v, want an *HTTPError for POST /status/%d", tc.code, got, tc.code)
			continue
		}
		if hookledgertest.IsPermanent(got) != tc.permanent {
			t.Errorf("%d: permanent %v, want %v", tc.code, hookledgertest.IsPermanent(got), tc.permanent)
		}
		if strings.Contains(got.Error(), "secret") {
			t.Errorf("%d: %q carries the URL's query", tc.code, got)
		}
		want := "answer" // trimmed
		if tc.code == 400 {
			want = long[:512]
		}
		if he.Body != want {
			t.Errorf("%d: body %.40q (%d bytes), want %.40q (%d bytes)", tc.code, he.Body, len(he.Body), want, len(want))
		}
	}
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// A check looks the charge up by the step's key: 404 on that exact GET
// proves the charge never happened; any other failure proves nothing.
func ExampleResponseError() {
	srv := httptest.NewServer(http.NotFoundHandler()) // a payments API without the charge
	defer srv.Close()
	find := func(ctx context.Context, key string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/charges/by-key/"+key, nil)
		if err != nil {
			return "", err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err // the question failed: retried
		}
		defer resp.Body.Close()
		var he *hookledger.HTTPError
		if err := hookledger.ResponseError(resp); errors.As(err, &he) && he.StatusCode == http.StatusNotFound {
			return "", fmt.Errorf("%w: %w", he, hookledger.ErrNotDone)
		} else if err != nil {
			return "", err
		}
		return "ch_1", nil // read the charge's id from resp.Body
	}
	_, err := find(context.Background(), "hl_1")
	fmt.Println(err)
	fmt.Println(errors.Is(err, hookledger.ErrNotDone))
	// Output:
	// GET /v1/charges/by-key/hl_1 answered 404: 404 page not found: effect did not happen
	// true
}
