package providerstub

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookledger/hookledger/webhook"
)

// GitHub plays one GitHub webhook: it sends events to the endpoint and
// serves the hook's deliveries API at its path (e.g.
// /repos/acme/shop/hooks/42/deliveries).
type GitHub struct {
	sender
	token string
	hook  string // "repos/OWNER/REPO/hooks/ID" or "orgs/ORG/hooks/ID"

	deliveries []*ghDelivery // oldest first
	nextID     int64
}

// ghDelivery is one delivery attempt, as the API describes it.
type ghDelivery struct {
	id          int64
	guid        string
	deliveredAt time.Time
	redelivery  bool
	duration    float64
	status      string
	statusCode  int
	event       string
	action      string
	reqHeaders  map[string]string
	body        []byte // the bytes sent
	respHeaders map[string]string
	respBody    string
}

// ghItem is the hook-delivery-item schema.
type ghItem struct {
	ID             int64   `json:"id"`
	GUID           string  `json:"guid"`
	DeliveredAt    string  `json:"delivered_at"`
	Redelivery     bool    `json:"redelivery"`
	Duration       float64 `json:"duration"`
	Status         string  `json:"status"`
	StatusCode     int     `json:"status_code"`
	Event          string  `json:"event"`
	Action         *string `json:"action"`
	InstallationID *int64  `json:"installation_id"`
	RepositoryID   *int64  `json:"repository_id"`
	ThrottledAt    *string `json:"throttled_at"`
}

// ghFull is the hook-delivery schema: the item plus the request and
// response. request.payload is an object (the parsed body), response.payload
// a string.
type ghFull struct {
	ghItem
	URL     string `json:"url"`
	Request struct {
		Headers map[string]string `json:"headers"`
		Payload any               `json:"payload"`
	} `json:"request"`
	Response struct {
		Headers map[string]string `json:"headers"`
		Payload *string           `json:"payload"`
	} `json:"response"`
}

const repositoryID = 1296269

func (d *ghDelivery) item() ghItem {
	it := ghItem{ID: d.id, GUID: d.guid, DeliveredAt: d.deliveredAt.UTC().Format(time.RFC3339), Redelivery: d.redelivery,
		Duration: d.duration, Status: d.status, StatusCode: d.statusCode, Event: d.event}
	if d.action != "" {
		a := d.action
		it.Action = &a
	}
	repo := int64(repositoryID)
	it.RepositoryID = &repo
	return it
}

func newGUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x10 // GitHub's delivery GUIDs are version-1 UUIDs
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Emit sends an event (X-GitHub-Event) with payload (a JSON object, sent as
// is) once, and returns its delivery GUID and whether the endpoint answered
// 2xx.
func (g *GitHub) Emit(ctx context.Context, event string, payload json.RawMessage) (guid string, delivered bool, err error) {
	var probe map[string]any
	if err := json.Unmarshal(payload, &probe); err != nil {
		return "", false, fmt.Errorf("github stub: payload is not a JSON object: %w", err)
	}
	action, _ := probe["action"].(string)
	guid = newGUID()
	d := g.deliver(ctx, guid, event, action, payload, false)
	return guid, d.statusCode >= 200 && d.statusCode < 300, nil
}

// deliver makes one attempt and records it.
func (g *GitHub) deliver(ctx context.Context, guid, event, action string, body []byte, redelivery bool) *ghDelivery {
	_, secret, _ := g.endpoint()
	v, _ := webhook.New(webhook.Config{Provider: "github"})
	hdr, err := v.Sign(webhook.Message{ID: guid, Type: event, Body: body}, secret)
	if err != nil {
		hdr = http.Header{}
	}
	hookID := g.hook[strings.LastIndex(g.hook, "/")+1:]
	hdr.Set("User-Agent", "GitHub-Hookshot/0c1e4b2")
	hdr.Set("Accept", "*/*")
	hdr.Set("X-GitHub-Hook-ID", hookID)
	hdr.Set("X-GitHub-Hook-Installation-Target-ID", strconv.Itoa(repositoryID))
	hdr.Set("X-GitHub-Hook-Installation-Target-Type", "repository")
	a := g.post(ctx, hdr, body)
	d := &ghDelivery{guid: guid, deliveredAt: g.now(), redelivery: redelivery, duration: a.duration.Seconds(),
		statusCode: a.status, event: event, action: action, body: body, reqHeaders: map[string]string{}, respHeaders: map[string]string{}}
	// request.headers spells the names as GitHub sends them.
	for _, k := range []string{"Accept", "User-Agent", "X-GitHub-Delivery", "X-GitHub-Event", "X-GitHub-Hook-ID",
		"X-GitHub-Hook-Installation-Target-ID", "X-GitHub-Hook-Installation-Target-Type", "X-Hub-Signature", "X-Hub-Signature-256"} {
		if v := hdr.Get(k); v != "" {
			d.reqHeaders[k] = v
		}
	}
	d.reqHeaders["content-type"] = hdr.Get("Content-Type")
	switch {
	case a.status == 0:
		d.status, d.statusCode = "failed to connect to host", 502
	case a.ok():
		d.status = "OK"
	default:
		d.status = fmt.Sprintf("Invalid HTTP Response: %d", a.status)
	}
	for k := range a.header {
		d.respHeaders[k] = a.header.Get(k)
	}
	d.respBody = a.body
	g.sender.mu.Lock()
	g.nextID++
	d.id = 12345000000 + g.nextID
	g.deliveries = append(g.deliveries, d)
	g.sender.mu.Unlock()
	return d
}

// Failed lists the GUIDs none of whose deliveries got a 2xx.
func (g *GitHub) Failed() []string {
	g.sender.mu.Lock()
	defer g.sender.mu.Unlock()
	ok := map[string]bool{}
	var order []string
	for _, d := range g.deliveries {
		if _, seen := ok[d.guid]; !seen {
			order = append(order, d.guid)
			ok[d.guid] = false
		}
		if d.statusCode >= 200 && d.statusCode < 300 {
			ok[d.guid] = true
		}
	}
	var out []string
	for _, guid := range order {
		if !ok[guid] {
			out = append(out, guid)
		}
	}
	return out
}

func githubError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest/repos/webhooks", "status": strconv.Itoa(status)})
}

// ServeHTTP serves the hook's deliveries API.
func (g *GitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if tok := bearer(r); tok == "" {
		githubError(w, http.StatusUnauthorized, "Requires authentication")
		return
	} else if tok != g.token {
		githubError(w, http.StatusUnauthorized, "Bad credentials")
		return
	}
	rest, ok := strings.CutPrefix(strings.Trim(r.URL.Path, "/"), g.hook+"/deliveries")
	if !ok {
		githubError(w, http.StatusNotFound, "Not Found")
		return
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	switch {
	case rest == "" && r.Method == http.MethodGet:
		g.list(w, r)
	case len(parts) == 1 && r.Method == http.MethodGet:
		if d := g.find(parts[0]); d != nil {
			writeJSON(w, http.StatusOK, d.full())
			return
		}
		githubError(w, http.StatusNotFound, "Not Found")
	case len(parts) == 2 && parts[1] == "attempts" && r.Method == http.MethodPost:
		d := g.find(parts[0])
		if d == nil {
			githubError(w, http.StatusNotFound, "Not Found")
			return
		}
		// GitHub answers 202 and delivers again with the same GUID; the stub
		// delivers before answering, which a caller cannot tell apart.
		g.deliver(r.Context(), d.guid, d.event, d.action, d.body, true)
		writeJSON(w, http.StatusAccepted, map[string]any{})
	default:
		githubError(w, http.StatusNotFound, "Not Found")
	}
}

func (g *GitHub) find(id string) *ghDelivery {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil
	}
	g.sender.mu.Lock()
	defer g.sender.mu.Unlock()
	for _, d := range g.deliveries {
		if d.id == n && d.deliveredAt.After(g.now().Add(-3*24*time.Hour)) {
			return d
		}
	}
	return nil
}

func (d *ghDelivery) full() ghFull {
	f := ghFull{ghItem: d.item(), URL: "https://hooks.example.com/webhooks/github/acme"}
	f.Request.Headers = d.reqHeaders
	// The API hands the payload back parsed: re-encoded, its bytes differ
	// from those sent (key order, escaping, whitespace).
	var payload any
	json.Unmarshal(d.body, &payload)
	f.Request.Payload = payload
	f.Response.Headers = d.respHeaders
	if d.statusCode != 502 || d.respBody != "" {
		b := d.respBody
		f.Response.Payload = &b
	}
	return f
}

// list serves a page, newest first. The cursor is opaque to clients; here
// it is "v1_" and the id the page starts at.
func (g *GitHub) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	perPage := 30
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			githubError(w, http.StatusBadRequest, "Invalid per_page")
			return
		}
		perPage = min(max(n, 1), 100)
	}
	startAt := int64(-1)
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.ParseInt(strings.TrimPrefix(c, "v1_"), 10, 64)
		if !strings.HasPrefix(c, "v1_") || err != nil {
			githubError(w, http.StatusBadRequest, "Invalid cursor")
			return
		}
		startAt = n
	}
	status := q.Get("status")
	if status != "" && status != "success" && status != "failure" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed", "documentation_url": "https://docs.github.com/rest/repos/webhooks"})
		return
	}
	g.sender.mu.Lock()
	cutoff := g.now().Add(-3 * 24 * time.Hour) // deliveries are kept for 3 days
	var all []*ghDelivery
	for _, d := range g.deliveries {
		if !d.deliveredAt.After(cutoff) || (startAt >= 0 && d.id > startAt) {
			continue
		}
		switch {
		case status == "success" && (d.statusCode < 200 || d.statusCode > 399):
			continue
		case status == "failure" && (d.statusCode < 400 || d.statusCode > 599):
			continue
		}
		all = append(all, d)
	}
	g.sender.mu.Unlock()
	slices.SortFunc(all, func(a, b *ghDelivery) int { return int(b.id - a.id) })
	page := all[:min(perPage, len(all))]
	items := make([]ghItem, len(page))
	for i, d := range page {
		items[i] = d.item()
	}
	if len(all) > perPage {
		next := *r.URL
		nq := next.Query()
		nq.Set("per_page", strconv.Itoa(perPage))
		nq.Set("cursor", fmt.Sprintf("v1_%d", all[perPage].id))
		next.RawQuery = nq.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<http://%s%s>; rel="next"`, r.Host, next.RequestURI()))
	}
	writeJSON(w, http.StatusOK, items)
}
