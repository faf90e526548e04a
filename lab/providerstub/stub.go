// Package providerstub is a local stand-in for two webhook senders, Stripe
// and GitHub, for the reconcile tests and the outage demo. Each side plays
// both parts of the provider:
//
//   - the sender: Emit creates an event and delivers it, signed with the
//     endpoint's secret, to the configured webhook URL, and records how the
//     attempt went (2xx, another status, or no connection). SetDown makes
//     every attempt fail without reaching the receiver (an outage);
//     SetSecret makes the sender sign with another secret (a misconfigured
//     endpoint that answers 401).
//   - the API a receiver's operator can ask afterwards, with the documented
//     request and response shapes: Stripe's List Events (GET /v1/events:
//     created[gte|gt|lte|lt], delivery_success, type, types[], limit,
//     starting_after, ending_before, has_more; bearer or basic auth) and
//     GitHub's hook deliveries (GET .../hooks/{id}/deliveries with per_page,
//     cursor and the Link header, GET .../deliveries/{id}, POST
//     .../deliveries/{id}/attempts to redeliver; bearer token); and, for
//     Stripe's thin events, the v2 Events API and the objects they point at
//     (thin.go).
//
// Nothing here is the product: it exists so that hookledger reconcile can be
// proven against the providers' documented API shapes without a network.
// Sources of the shapes: lab/docs/proofs.md ("Reconcile").
package providerstub

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Server serves both APIs: paths under /v1/ and /v2/ are Stripe's, paths
// under /repos/ and /orgs/ GitHub's.
type Server struct {
	Stripe *Stripe
	GitHub *GitHub
}

// Options configure New.
type Options struct {
	StripeKey   string           // the secret API key List Events accepts (default "sk_test_stub")
	GitHubToken string           // the token the deliveries API accepts (default "ghp_stub")
	GitHubHook  string           // the hook's API path (default "repos/acme/shop/hooks/42")
	Now         func() time.Time // clock (default time.Now)
	Client      *http.Client     // for deliveries (default: 10 s timeout)
}

// New returns a stub with no events and no endpoints configured.
func New(o Options) *Server {
	if o.StripeKey == "" {
		o.StripeKey = "sk_test_stub"
	}
	if o.GitHubToken == "" {
		o.GitHubToken = "ghp_stub"
	}
	if o.GitHubHook == "" {
		o.GitHubHook = "repos/acme/shop/hooks/42"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	return &Server{
		Stripe: &Stripe{key: o.StripeKey, sender: sender{now: o.Now, client: o.Client}, byID: map[string]*stripeEvent{},
			thin: map[string]*thinEvent{}, objects: map[string]storedObject{}, fetches: map[string]int{}},
		GitHub: &GitHub{token: o.GitHubToken, hook: strings.Trim(o.GitHubHook, "/"), sender: sender{now: o.Now, client: o.Client}},
	}
}

// ServeHTTP routes to the Stripe or GitHub API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/v1/"), strings.HasPrefix(r.URL.Path, "/v2/"):
		s.Stripe.ServeHTTP(w, r)
	case strings.HasPrefix(r.URL.Path, "/repos/"), strings.HasPrefix(r.URL.Path, "/orgs/"):
		s.GitHub.ServeHTTP(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
	}
}

// sender is the delivering half both providers share: one endpoint, its
// secret, and an outage switch.
type sender struct {
	now    func() time.Time
	client *http.Client

	mu     sync.Mutex
	url    string
	secret string
	down   bool
	// Attempts counts delivery attempts, and Reached those that reached the
	// receiver (whatever it answered).
	attempts, reached int
}

// attempt is the outcome of one delivery attempt.
type attempt struct {
	status   int // 0: no connection
	header   http.Header
	body     string
	duration time.Duration
}

func (a attempt) ok() bool { return a.status >= 200 && a.status < 300 }

func (s *sender) endpoint() (url, secret string, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url, s.secret, s.down
}

// post makes one delivery attempt, unless the endpoint is down.
func (s *sender) post(ctx context.Context, hdr http.Header, body []byte) attempt {
	url, _, down := s.endpoint()
	s.mu.Lock()
	s.attempts++
	s.mu.Unlock()
	if down || url == "" {
		return attempt{}
	}
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return attempt{}
	}
	req.Header = hdr.Clone()
	resp, err := s.client.Do(req)
	if err != nil {
		return attempt{duration: time.Since(start)}
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	s.mu.Lock()
	s.reached++
	s.mu.Unlock()
	return attempt{status: resp.StatusCode, header: resp.Header, body: string(b), duration: time.Since(start)}
}

// SetEndpoint sets the webhook URL deliveries go to and the secret they are
// signed with.
func (s *sender) SetEndpoint(url, secret string) {
	s.mu.Lock()
	s.url, s.secret = url, secret
	s.mu.Unlock()
}

// SetDown turns the outage on or off: while down, every attempt fails
// without reaching the receiver, as when the endpoint is unreachable.
func (s *sender) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// SetSecret changes the secret deliveries are signed with (a wrong one makes
// the receiver answer 401, as a misconfigured endpoint does).
func (s *sender) SetSecret(secret string) {
	s.mu.Lock()
	s.secret = secret
	s.mu.Unlock()
}

// Attempts returns how many delivery attempts were made and how many reached
// the receiver.
func (s *sender) Attempts() (attempts, reached int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts, s.reached
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// bearer returns the credential of an Authorization header: "Bearer X",
// "token X" (GitHub's older form) or HTTP Basic with X as the user name
// (Stripe's curl examples).
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if v, ok := strings.CutPrefix(h, "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	if v, ok := strings.CutPrefix(h, "token "); ok {
		return strings.TrimSpace(v)
	}
	if u, _, ok := r.BasicAuth(); ok {
		return u
	}
	return ""
}
