package providerstub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// get calls the stub's API and decodes the answer.
func get(t *testing.T, srv *httptest.Server, auth, path string, out any) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return resp
}

type page struct {
	Object  string            `json:"object"`
	URL     string            `json:"url"`
	HasMore bool              `json:"has_more"`
	Data    []json.RawMessage `json:"data"`
	Error   *struct {
		Type, Message, Param string
	} `json:"error"`
}

func ids(t *testing.T, p page) []string {
	t.Helper()
	var out []string
	for _, d := range p.Data {
		var e struct{ ID string }
		json.Unmarshal(d, &e)
		out = append(out, e.ID)
	}
	return out
}

// receiver answers 200 unless told otherwise.
type receiver struct {
	mu     sync.Mutex
	status int
	got    []http.Header
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, req.Header.Clone())
	if r.status != 0 {
		w.WriteHeader(r.status)
	}
}

func TestStripeListEventsPaginationAndFilters(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_750_000_000, 0)
	var clock sync.Mutex
	stub := New(Options{Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now }})
	rcv := &receiver{}
	hooks := httptest.NewServer(rcv)
	defer hooks.Close()
	api := httptest.NewServer(stub)
	defer api.Close()
	stub.Stripe.SetEndpoint(hooks.URL, "whsec_x")
	ctx := context.Background()
	var all, failed []string
	for i := range 25 {
		clock.Lock()
		now = now.Add(time.Duration(i%2) * time.Second) // ties within one second
		clock.Unlock()
		stub.Stripe.SetDown(i%5 == 0)
		id, ok, err := stub.Stripe.Emit(ctx, "invoice.paid", json.RawMessage(fmt.Sprintf(`{"id":"in_%d","object":"invoice"}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		all = append([]string{id}, all...) // newest first
		if !ok {
			failed = append([]string{id}, failed...)
		}
	}
	if len(failed) != 5 || len(rcv.got) != 20 || rcv.got[0].Get("Stripe-Signature") == "" {
		t.Fatalf("failed %d, delivered %d", len(failed), len(rcv.got))
	}
	key := "Bearer sk_test_stub"

	// Forward through every page with starting_after.
	var walked []string
	after := ""
	pages := 0
	for {
		var p page
		q := "/v1/events?limit=10"
		if after != "" {
			q += "&starting_after=" + after
		}
		get(t, api, key, q, &p)
		pages++
		if p.Object != "list" || p.URL != "/v1/events" {
			t.Fatalf("page %+v", p)
		}
		got := ids(t, p)
		walked = append(walked, got...)
		if !p.HasMore {
			break
		}
		after = got[len(got)-1]
	}
	if pages != 3 || strings.Join(walked, ",") != strings.Join(all, ",") {
		t.Fatalf("%d pages; walked %v, want %v", pages, walked, all)
	}
	// Backward with ending_before: the 10 events just newer than the 15th, newest first.
	var p page
	get(t, api, key, "/v1/events?limit=10&ending_before="+all[15], &p)
	if got := ids(t, p); strings.Join(got, ",") != strings.Join(all[5:15], ",") || !p.HasMore {
		t.Fatalf("ending_before: %v has_more %v, want %v", got, p.HasMore, all[5:15])
	}
	// delivery_success=false: the failed ones only.
	p = page{}
	get(t, api, key, "/v1/events?limit=100&delivery_success=false", &p)
	if got := ids(t, p); strings.Join(got, ",") != strings.Join(failed, ",") || p.HasMore {
		t.Fatalf("undelivered %v, want %v", got, failed)
	}
	// created[gte] bounds the window; types[] filters.
	p = page{}
	get(t, api, key, fmt.Sprintf("/v1/events?limit=100&created%%5Bgte%%5D=%d&types%%5B0%%5D=invoice.paid", now.Unix()), &p)
	for _, d := range p.Data {
		var e struct{ Created int64 }
		json.Unmarshal(d, &e)
		if e.Created < now.Unix() {
			t.Fatalf("created %d before the bound", e.Created)
		}
	}
	if len(p.Data) == 0 || len(p.Data) == 25 {
		t.Fatalf("created[gte] kept %d of 25", len(p.Data))
	}
	p = page{}
	get(t, api, key, "/v1/events?types[]=customer.created", &p)
	if len(p.Data) != 0 {
		t.Fatalf("types filter kept %d", len(p.Data))
	}

	// Errors in Stripe's shape.
	for _, tc := range []struct {
		auth, q string
		status  int
		param   string
	}{
		{"", "/v1/events", 401, ""},
		{"Bearer sk_wrong", "/v1/events", 401, ""},
		{key, "/v1/events?limit=0", 400, "limit"},
		{key, "/v1/events?limit=101", 400, "limit"},
		{key, "/v1/events?starting_after=" + all[0] + "&ending_before=" + all[1], 400, "ending_before"},
		{key, "/v1/events?starting_after=evt_nope", 400, "starting_after"},
		{key, "/v1/events?delivery_success=maybe", 400, "delivery_success"},
	} {
		var p page
		resp := get(t, api, tc.auth, tc.q, &p)
		if resp.StatusCode != tc.status || p.Error == nil || p.Error.Param != tc.param {
			t.Errorf("%s %q: %d %+v", tc.auth, tc.q, resp.StatusCode, p.Error)
		}
	}
	// Basic auth with the key as user name works as well.
	req, _ := http.NewRequest(http.MethodGet, api.URL+"/v1/events", nil)
	req.SetBasicAuth("sk_test_stub", "")
	if resp, err := api.Client().Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("basic auth: %v %v", resp.StatusCode, err)
	}

	// Stripe's own retry gets the failed ones through once the endpoint is up.
	stub.Stripe.SetDown(false)
	if n := stub.Stripe.Retry(ctx); n != 5 || len(stub.Stripe.Undelivered()) != 0 {
		t.Fatalf("retry delivered %d, %d left", n, len(stub.Stripe.Undelivered()))
	}
}

func TestGitHubDeliveriesPaginationAndRedelivery(t *testing.T) {
	t.Parallel()
	stub := New(Options{})
	rcv := &receiver{}
	hooks := httptest.NewServer(rcv)
	defer hooks.Close()
	api := httptest.NewServer(stub)
	defer api.Close()
	stub.GitHub.SetEndpoint(hooks.URL, "gh_secret")
	ctx := context.Background()
	for i := range 7 {
		stub.GitHub.SetDown(i == 3)
		if i == 5 {
			rcv.status = 503
		}
		if _, _, err := stub.GitHub.Emit(ctx, "push", json.RawMessage(fmt.Sprintf(`{"ref":"refs/heads/main","n":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	if failed := stub.GitHub.Failed(); len(failed) != 3 {
		t.Fatalf("failed %v", failed) // #3 down, #5 and #6 answered 503
	}
	auth := "Bearer ghp_stub"
	base := "/repos/acme/shop/hooks/42/deliveries"

	// Three pages of 3, 3, 1, newest first, following Link rel="next".
	var all []map[string]any
	next := api.URL + base + "?per_page=3"
	pages := 0
	for next != "" {
		req, _ := http.NewRequest(http.MethodGet, next, nil)
		req.Header.Set("Authorization", auth)
		resp, err := api.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var items []map[string]any
		json.NewDecoder(resp.Body).Decode(&items)
		resp.Body.Close()
		pages++
		all = append(all, items...)
		next = ""
		if l := resp.Header.Get("Link"); l != "" {
			u, _, ok := strings.Cut(strings.TrimPrefix(l, "<"), ">")
			if !ok || !strings.Contains(l, `rel="next"`) || !strings.Contains(u, "cursor=v1_") {
				t.Fatalf("Link %q", l)
			}
			next = u
		}
	}
	if pages != 3 || len(all) != 7 {
		t.Fatalf("%d pages, %d items", pages, len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i]["id"].(float64) >= all[i-1]["id"].(float64) {
			t.Fatalf("not newest first: %v", all)
		}
	}
	for _, f := range []string{"id", "guid", "delivered_at", "redelivery", "duration", "status", "status_code", "event", "action", "installation_id", "repository_id"} {
		if _, ok := all[0][f]; !ok {
			t.Fatalf("item lacks %s: %v", f, all[0])
		}
	}
	if all[0]["status_code"].(float64) != 503 || all[3]["status"] != "failed to connect to host" {
		t.Fatalf("statuses %v / %v", all[0], all[3])
	}
	var failure []map[string]any
	get(t, api, auth, base+"?status=failure", &failure)
	if len(failure) != 3 {
		t.Fatalf("status=failure: %d", len(failure))
	}

	// One delivery: request headers and the payload as an object.
	id := fmt.Sprint(int64(all[3]["id"].(float64)))
	var full struct {
		GUID    string `json:"guid"`
		Request struct {
			Headers map[string]string `json:"headers"`
			Payload map[string]any    `json:"payload"`
		} `json:"request"`
	}
	get(t, api, auth, base+"/"+id, &full)
	if full.Request.Headers["X-GitHub-Event"] != "push" || full.Request.Headers["X-GitHub-Delivery"] != full.GUID || full.Request.Payload["n"] != float64(3) {
		t.Fatalf("delivery %+v", full)
	}

	// Redeliver: 202, a new delivery with the same GUID and redelivery true.
	before := len(rcv.got)
	req, _ := http.NewRequest(http.MethodPost, api.URL+base+"/"+id+"/attempts", nil)
	req.Header.Set("Authorization", auth)
	resp, err := api.Client().Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("attempts: %v %v", resp.StatusCode, err)
	}
	if len(rcv.got) != before+1 || rcv.got[before].Get("X-GitHub-Delivery") != full.GUID {
		t.Fatalf("redelivery did not arrive with guid %s", full.GUID)
	}
	var latest []map[string]any
	get(t, api, auth, base+"?per_page=1", &latest)
	if latest[0]["guid"] != full.GUID || latest[0]["redelivery"] != true {
		t.Fatalf("latest %v", latest[0])
	}

	for _, tc := range []struct {
		auth, path string
		status     int
	}{
		{"", base, 401},
		{"Bearer nope", base, 401},
		{auth, "/repos/acme/other/hooks/42/deliveries", 404},
		{auth, base + "/999", 404},
		{auth, base + "?cursor=bogus", 400},
		{auth, base + "?status=maybe", 422},
	} {
		if resp := get(t, api, tc.auth, tc.path, nil); resp.StatusCode != tc.status {
			t.Errorf("%q %s: %d, want %d", tc.auth, tc.path, resp.StatusCode, tc.status)
		}
	}
}
