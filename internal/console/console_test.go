package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookledger/hookledger/ledger"
)

// fakeLedger is the pages' ledger for these unit tests; the lab's browser
// test runs the console over the real one.
type fakeLedger struct{ recs []ledger.Record }

func (f *fakeLedger) Find(_ context.Context, q ledger.Query) (ledger.Page, error) {
	var p ledger.Page
	for _, r := range f.recs {
		if q.Status == "" || r.Status == q.Status {
			p.Records = append(p.Records, r)
		}
	}
	return p, nil
}

func (f *fakeLedger) Get(_ context.Context, id ledger.Key) (ledger.Record, error) {
	for _, r := range f.recs {
		if r.Key == id {
			return r, nil
		}
	}
	return ledger.Record{}, ledger.ErrNotFound
}

func (f *fakeLedger) Table() string { return "hl-test" }

// fakeActions records what was asked of it.
type fakeActions struct {
	mu   sync.Mutex
	done []string
}

func (a *fakeActions) Replay(_ context.Context, r Replay, dry bool) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	line := fmt.Sprintf("replay %s step=%s done=%v result=%s dry=%v", r.ID, r.Step, r.MarkDone, r.Result, dry)
	if !dry {
		a.done = append(a.done, line)
	}
	return line, nil
}

func (a *fakeActions) Redrive(_ context.Context, dry bool) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !dry {
		a.done = append(a.done, "redrive")
	}
	return "redrive", nil
}

func (a *fakeActions) taken() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.done...)
}

// The hostile strings a webhook can carry in its id, type, body and error.
const (
	scriptTag = `<script>window.pwned=1</script>`
	imgTag    = `"><img src=x onerror="window.pwned=1">`
)

const host = "127.0.0.1:8095"

func setup(t *testing.T) (*Server, *fakeActions, ledger.Record) {
	t.Helper()
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	hostile := ledger.Record{
		Key: ledger.Key{Source: "stripe", Tenant: "evil", ID: scriptTag}, EventType: imgTag, Status: ledger.Dead,
		LastError: "indeterminate step charge: " + imgTag, CreatedAt: now.Add(-time.Hour), UpdatedAt: now,
		Steps: map[string]ledger.Step{"charge": {Status: ledger.StepStarted, At: now.Add(-50 * time.Minute)}},
		Runs:  []ledger.Run{{Start: now.Add(-55 * time.Minute), End: now.Add(-40 * time.Minute), Outcome: ledger.RunDead, Error: imgTag}},
	}
	acts := &fakeActions{}
	s, err := New(Config{
		Ledger: &fakeLedger{recs: []ledger.Record{hostile}}, Actions: acts, Hosts: []string{host},
		Body: func(context.Context, ledger.Record) ([]byte, error) {
			return []byte(`{"note":"` + scriptTag + imgTag + `"}`), nil
		},
		Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, acts, hostile
}

func get(t *testing.T, s *Server, path string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://"+host+path, nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	return w.Result(), w.Body.String()
}

// TestPagesEscapeWhatTheLedgerHolds: ids, types, errors and bodies are the
// sender's data; every page shows them as text, never as markup.
func TestPagesEscapeWhatTheLedgerHolds(t *testing.T) {
	t.Parallel()
	s, _, rec := setup(t)
	ev := eventURL(rec.Key)
	for _, path := range []string{"/", "/?status=dead", "/attention", ev, ev + "&body=1",
		"/confirm?" + url.Values{"action": {"replay"}, "source": {"stripe"}, "tenant": {"evil"}, "id": {scriptTag}, "step": {"charge"}, "how": {"done"}, "result": {imgTag}}.Encode()} {
		resp, body := get(t, s, path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, body)
		}
		for _, raw := range []string{"<script>window", "<img src=x"} {
			if strings.Contains(body, raw) {
				t.Errorf("GET %s: the page holds %q unescaped", path, raw)
			}
		}
		if !strings.Contains(body, "&lt;script&gt;window.pwned=1&lt;/script&gt;") && !strings.Contains(body, "&#34;&gt;&lt;img src=x") {
			t.Errorf("GET %s: the hostile text is not shown escaped", path)
		}
	}
	if _, body := get(t, s, ev); strings.Contains(body, `"note"`) {
		t.Error("the event page showed the body without being asked")
	}
	if _, body := get(t, s, ev+"&body=1"); !strings.Contains(body, "{&#34;note&#34;:&#34;&lt;script&gt;") {
		t.Error("the body, asked for, is not shown as escaped text")
	}
}

// TestEveryResponseIsLockedDown: a strict Content-Security-Policy (only
// the console's own script runs, nothing frames it) and no sniffing, on
// pages, errors and static files alike.
func TestEveryResponseIsLockedDown(t *testing.T) {
	t.Parallel()
	s, _, _ := setup(t)
	for _, path := range []string{"/", "/event?source=a&tenant=b&id=nope", "/static/console.js", "/static/console.css", "/nowhere"} {
		resp, _ := get(t, s, path)
		h := resp.Header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			!strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: headers %v", path, h)
		}
	}
	if resp, _ := get(t, s, "/static/console.js"); !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("console.js served as %q", resp.Header.Get("Content-Type"))
	}
	for _, path := range []string{"/", "/static/console.js"} {
		_, body := get(t, s, path)
		if strings.Contains(body, "onclick=") || strings.Contains(body, "<script>") || strings.Contains(body, "style=") {
			t.Errorf("GET %s has inline script or style, which the policy blocks", path)
		}
	}
}

// TestActionsRefuseCrossSiteRequests: an action runs only from a POST of
// the console's own confirmation, with its token, from its own origin.
// Regression for what a console without these checks allows: any page the
// operator opens could post a replay to 127.0.0.1.
func TestActionsRefuseCrossSiteRequests(t *testing.T) {
	t.Parallel()
	s, acts, rec := setup(t)
	f := actionForm{Action: "replay", Source: rec.Source, Tenant: rec.Tenant, ID: rec.ID, Step: "charge", How: "done", Result: "ch_1"}
	good := s.token(f)
	post := func(h string, form url.Values, hdr map[string]string) int {
		req := httptest.NewRequest(http.MethodPost, "http://"+h+"/act", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		return w.Code
	}
	form := func(token string, change func(url.Values)) url.Values {
		v := url.Values{"action": {f.Action}, "source": {f.Source}, "tenant": {f.Tenant}, "id": {f.ID}, "step": {f.Step}, "how": {f.How}, "result": {f.Result}, "token": {token}}
		if change != nil {
			change(v)
		}
		return v
	}
	for _, tc := range []struct {
		what string
		host string
		form url.Values
		hdr  map[string]string
	}{
		{"another site's page (Origin)", host, form(good, nil), map[string]string{"Origin": "https://evil.example"}},
		{"another local port (Origin)", host, form(good, nil), map[string]string{"Origin": "http://127.0.0.1:9999"}},
		{"another site's page (Sec-Fetch-Site)", host, form(good, nil), map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"a rebound name (Host)", "evil.example:8095", form(good, nil), map[string]string{"Origin": "http://evil.example:8095"}},
		{"no token", host, form("", nil), nil},
		{"a made-up token", host, form(strings.Repeat("0", 64), nil), nil},
		{"another event with this token", host, form(good, func(v url.Values) { v.Set("id", "evt_other") }), nil},
		{"another step result with this token", host, form(good, func(v url.Values) { v.Set("result", "ch_2") }), nil},
	} {
		if code := post(tc.host, tc.form, tc.hdr); code != http.StatusForbidden && code != http.StatusMisdirectedRequest {
			t.Errorf("%s: answered %d, want it refused", tc.what, code)
		}
	}
	if got := acts.taken(); len(got) != 0 {
		t.Fatalf("refused requests acted: %v", got)
	}
	if resp, _ := get(t, s, "/act?"+form(good, nil).Encode()); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /act: %d, want 405", resp.StatusCode)
	}
	if code := post(host, form(good, nil), map[string]string{"Origin": "http://" + host, "Sec-Fetch-Site": "same-origin"}); code != http.StatusOK {
		t.Fatalf("the console's own confirmation: %d", code)
	}
	if got := acts.taken(); len(got) != 1 || got[0] != "replay stripe/evil/"+scriptTag+" step=charge done=true result=ch_1 dry=false" {
		t.Fatalf("actions taken: %v", got)
	}
}

// TestConfirmShowsTheDryRunAndATokenForThatAction: the confirmation says
// what the CLI's --dry-run says, and its form carries a token for exactly
// that action.
func TestConfirmShowsTheDryRunAndATokenForThatAction(t *testing.T) {
	t.Parallel()
	s, acts, _ := setup(t)
	resp, body := get(t, s, "/confirm?action=redrive")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `<pre id="dry-run">redrive</pre>`) {
		t.Fatalf("confirm redrive: %d\n%s", resp.StatusCode, body)
	}
	if want := s.token(actionForm{Action: "redrive"}); !strings.Contains(body, `name="token" value="`+want+`"`) {
		t.Error("the confirmation's form lacks the redrive's token")
	}
	if len(acts.taken()) != 0 {
		t.Error("a confirmation page acted")
	}
	for _, q := range []string{"action=delete", "action=redrive&id=x", "action=replay&source=a&tenant=b", "action=replay&source=a&tenant=b&id=c&how=done", "action=replay&source=a&tenant=b&id=c&step=s&how=maybe"} {
		if resp, _ := get(t, s, "/confirm?"+q); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("confirm %s: %d, want 400", q, resp.StatusCode)
		}
	}
}

// TestHostsOfTheListener: a loopback listener answers to its address and
// localhost; the Host check refuses other names.
func TestHostsOfTheListener(t *testing.T) {
	t.Parallel()
	s, _, _ := setup(t)
	req := httptest.NewRequest(http.MethodGet, "http://rebound.example:8095/", nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != http.StatusMisdirectedRequest {
		t.Errorf("Host rebound.example: %d, want 421", w.Code)
	}
	io.Copy(io.Discard, w.Body)
}

// TestEventPageShowsItsTraceID: the record's first delivery's trace header
// shows as the trace id its log lines carry, to search X-Ray and the logs.
func TestEventPageShowsItsTraceID(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	rec := ledger.Record{
		Key: ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_traced"}, EventType: "invoice.paid", Status: ledger.Done,
		CreatedAt: now.Add(-time.Minute), UpdatedAt: now,
		Trace: "Root=1-6b1161f1-9fbe27bf175039d5222eae39;Parent=53995c3f42cd8ad8;Sampled=1",
	}
	s, err := New(Config{Ledger: &fakeLedger{recs: []ledger.Record{rec}}, Actions: &fakeActions{}, Hosts: []string{host},
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, s, eventURL(rec.Key))
	if !strings.Contains(body, "trace <code>1-6b1161f1-9fbe27bf175039d5222eae39</code>") {
		t.Errorf("the event page does not show the trace id:\n%s", body)
	}
}
