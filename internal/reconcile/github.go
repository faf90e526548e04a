package reconcile

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hookledger/hookledger/internal/providerapi"
	"github.com/hookledger/hookledger/webhook"
)

// GitHubAPI is GitHub's REST API base URL (GitHub Enterprise Server's: https://HOST/api/v3).
const GitHubAPI = "https://api.github.com"

// githubRetention is how long github.com keeps deliveries (Enterprise Server: 7 days).
const githubRetention = 3 * 24 * time.Hour

// hookPattern is a repository or organization webhook's API path.
var hookPattern = regexp.MustCompile(`^(repos/[A-Za-z0-9._-]+/[A-Za-z0-9._-]+|orgs/[A-Za-z0-9._-]+)/hooks/[0-9]+$`)

// GitHub lists a webhook's deliveries (GET .../hooks/{id}/deliveries,
// newest first, following the Link header) back to the window's start,
// grouped by GUID: the receiver's key (X-GitHub-Delivery), which
// redeliveries share.
//
// Rebuild takes the payload and headers of GET .../deliveries/{id}. GitHub
// returns the payload parsed: the same JSON, not necessarily the original
// bytes. Redeliver asks GitHub to send the original again instead.
type GitHub struct {
	api  *providerapi.Client
	hook string // "repos/OWNER/REPO/hooks/ID" or "orgs/ORG/hooks/ID"
}

// GitHubOptions configure NewGitHub.
type GitHubOptions struct {
	Token   string // a token with the Webhooks read permission (write to redeliver)
	Hook    string // "repos/OWNER/REPO/hooks/ID" or "orgs/ORG/hooks/ID"
	BaseURL string // default GitHubAPI
	// TrustBaseURL allows a BaseURL on another host than GitHubAPI's
	// (GitHub Enterprise Server, a proxy); a loopback host needs none.
	TrustBaseURL bool
	Client       *http.Client // default: 30 s timeout
}

// NewGitHub returns a GitHub webhook's deliveries API as a Provider.
func NewGitHub(o GitHubOptions) (*GitHub, error) {
	if o.Token == "" {
		return nil, errors.New("github: no token (the credential must be a token with the Webhooks read permission)")
	}
	hook := strings.Trim(o.Hook, "/")
	if !hookPattern.MatchString(hook) {
		return nil, fmt.Errorf("github: hook %q: want repos/OWNER/REPO/hooks/ID or orgs/ORG/hooks/ID (the hook id is in the webhook's settings URL)", o.Hook)
	}
	base, err := baseURL(o.BaseURL, GitHubAPI, o.TrustBaseURL)
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+o.Token)
	h.Set("Accept", "application/vnd.github+json")
	h.Set("X-GitHub-Api-Version", "2022-11-28")
	c := cmp.Or(o.Client, &http.Client{Timeout: 30 * time.Second})
	// GitHub's REST API best practices: requests one at a time, at least
	// one second between mutating requests (the redelivery POSTs), and at
	// least a minute after a rate-limit answer that names no time.
	api := &providerapi.Client{Provider: "github", Base: base, HTTP: c, Header: h, UserAgent: userAgent, Hints: githubHints,
		Serial: make(chan struct{}, 1), MutationGap: time.Second, RateLimitMin: time.Minute}
	return &GitHub{api: api, hook: hook}, nil
}

// Name implements Provider.
func (g *GitHub) Name() string { return "github" }

// Scope says what List is asked for.
func (g *GitHub) Scope() string { return "every delivery of " + g.hook }

// Retention implements Provider: github.com keeps deliveries 3 days.
func (g *GitHub) Retention() time.Duration { return githubRetention }

// ghItem is the hook-delivery-item schema (the fields reconcile reads).
type ghItem struct {
	ID          int64     `json:"id"`
	GUID        string    `json:"guid"`
	DeliveredAt time.Time `json:"delivered_at"`
	Redelivery  bool      `json:"redelivery"`
	StatusCode  int       `json:"status_code"`
	Event       string    `json:"event"`
}

// ghEvent gathers one GUID's deliveries.
type ghEvent struct {
	guid, event string
	first       time.Time // the earliest delivery seen
	ok          bool      // some delivery got a 2xx
	deliveryID  int64     // the earliest delivery's id
}

// List implements Provider. Events reach fn as soon as their group is
// complete, page by page, so a listing that fails midway has fed what it
// reached, and memory does not grow with the window.
//
// The list is newest first and a redelivery follows its original, so every
// redelivery of a GUID is listed above the original. A group is complete
// when its original (redelivery false) is reached. GUIDs seen only as
// redeliveries wait; those left at the end have their original before the
// window: they get a zero At and count as too old. A redelivery made during
// the listing lands before the pages read; it could only add a newer
// delivery to a judged group, which changes nothing.
func (g *GitHub) List(ctx context.Context, since time.Time, fn func(Event) error) error {
	pending := map[string]*ghEvent{} // GUIDs seen only as redeliveries so far
	next := "/" + g.hook + "/deliveries?per_page=100"
	for next != "" {
		var page []ghItem
		hdr, err := g.api.Get(ctx, next, &page)
		if err != nil {
			return err
		}
		older := false
		for _, it := range page {
			if it.GUID == "" || it.ID == 0 {
				return fmt.Errorf("github API: a listed delivery has no guid or id")
			}
			if it.DeliveredAt.Before(since) {
				older = true
				continue
			}
			e := pending[it.GUID]
			if e == nil {
				e = &ghEvent{guid: it.GUID, event: it.Event}
			}
			if e.first.IsZero() || it.DeliveredAt.Before(e.first) || (it.DeliveredAt.Equal(e.first) && it.ID < e.deliveryID) {
				e.first, e.deliveryID = it.DeliveredAt, it.ID
			}
			if it.StatusCode >= 200 && it.StatusCode < 300 {
				e.ok = true
			}
			if it.Redelivery {
				pending[it.GUID] = e
				continue
			}
			// The original: every redelivery of this GUID was listed above.
			delete(pending, it.GUID)
			if err := fn(Event{ID: e.guid, Type: e.event, At: it.DeliveredAt, Failed: !e.ok, ref: fmt.Sprint(it.ID)}); err != nil {
				return err
			}
		}
		// Newest first: once a page reaches past the window, the rest is
		// older still.
		if older || len(page) == 0 {
			break
		}
		next = nextLink(hdr.Get("Link"))
		if next != "" && !sameOrigin(next, g.api.Base) {
			// Never send the token elsewhere.
			return fmt.Errorf("github API: the next page's link %q leaves %s", providerapi.RedactURL(next), g.api.Base)
		}
	}
	// Redeliveries whose original is before the window: not judged.
	rest := make([]*ghEvent, 0, len(pending))
	for _, e := range pending {
		rest = append(rest, e)
	}
	slices.SortFunc(rest, func(a, b *ghEvent) int {
		if c := a.first.Compare(b.first); c != 0 {
			return c
		}
		return cmp.Compare(a.deliveryID, b.deliveryID)
	})
	for _, e := range rest {
		if err := fn(Event{ID: e.guid, Type: e.event, Failed: !e.ok, ref: fmt.Sprint(e.deliveryID)}); err != nil {
			return err
		}
	}
	return nil
}

// linkEntry is one entry of a Link header.
var linkEntry = regexp.MustCompile(`<([^>]*)>\s*((?:;\s*[^;,]*)*)`)

// nextLink returns the URL of rel="next" in a Link header, or "".
func nextLink(h string) string {
	for _, m := range linkEntry.FindAllStringSubmatch(h, -1) {
		for _, p := range strings.Split(m[2], ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "rel") && slices.Contains(strings.Fields(strings.Trim(strings.TrimSpace(v), `"`)), "next") {
				return m[1]
			}
		}
	}
	return ""
}

// ghDelivery is the hook-delivery schema (the fields reconcile reads).
type ghDelivery struct {
	GUID    string `json:"guid"`
	Event   string `json:"event"`
	Request struct {
		Headers map[string]string `json:"headers"`
		Payload json.RawMessage   `json:"payload"`
	} `json:"request"`
}

// passHeaders are the delivery headers carried over into a rebuilt
// delivery; the signature, id and event headers are made anew.
var passHeaders = []string{"X-GitHub-Hook-ID", "X-GitHub-Hook-Installation-Target-ID", "X-GitHub-Hook-Installation-Target-Type"}

// Rebuild implements Provider.
func (g *GitHub) Rebuild(ctx context.Context, ev Event) (Delivery, error) {
	if ev.ref == "" {
		return Delivery{}, fmt.Errorf("github delivery %s: no delivery id", ev.ID)
	}
	var d ghDelivery
	if _, err := g.api.Get(ctx, "/"+g.hook+"/deliveries/"+url.PathEscape(ev.ref), &d); err != nil {
		return Delivery{}, err
	}
	if d.GUID != ev.ID {
		return Delivery{}, fmt.Errorf("github delivery %s: the API returned guid %q, want %q", ev.ref, d.GUID, ev.ID)
	}
	payload := bytes.TrimSpace(d.Request.Payload)
	if len(payload) == 0 || payload[0] != '{' {
		return Delivery{}, fmt.Errorf("github delivery %s: request.payload is not a JSON object", ev.ref)
	}
	var body bytes.Buffer
	if err := json.Compact(&body, payload); err != nil {
		return Delivery{}, fmt.Errorf("github delivery %s: request.payload: %w", ev.ref, err)
	}
	hdr := http.Header{}
	ctype := "application/json"
	for k, v := range d.Request.Headers {
		switch {
		case strings.EqualFold(k, "content-type"):
			ctype = v
		case slices.ContainsFunc(passHeaders, func(p string) bool { return strings.EqualFold(p, k) }):
			hdr.Set(k, v)
		}
	}
	b := body.Bytes()
	if strings.HasPrefix(strings.ToLower(ctype), "application/x-www-form-urlencoded") {
		// A hook with content type "form" sends the JSON as the payload field.
		b = []byte("payload=" + url.QueryEscape(body.String()))
	}
	hdr.Set("Content-Type", ctype)
	return Delivery{Message: webhook.Message{ID: ev.ID, Type: cmp.Or(d.Event, ev.Type), Body: b}, Header: hdr}, nil
}

// Redeliver implements Redeliverer: GitHub sends the event again, with its GUID.
func (g *GitHub) Redeliver(ctx context.Context, ev Event) error {
	if ev.ref == "" {
		return fmt.Errorf("github delivery %s: no delivery id", ev.ID)
	}
	_, err := g.api.Call(ctx, http.MethodPost, "/"+g.hook+"/deliveries/"+url.PathEscape(ev.ref)+"/attempts", nil)
	return err
}

// sameOrigin reports whether u is on base's scheme and host.
func sameOrigin(u, base string) bool {
	a, err1 := url.Parse(u)
	b, err2 := url.Parse(base)
	if err1 != nil || err2 != nil {
		return false
	}
	if a.Scheme == "" && a.Host == "" {
		return true // relative
	}
	return a.Scheme == b.Scheme && strings.EqualFold(a.Host, b.Host)
}
