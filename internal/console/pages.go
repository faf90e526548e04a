package console

import (
	"bytes"
	"crypto/hmac"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/ledger"
)

// BodyCap is the most of a body the console and inspect --body show.
const BodyCap = 64 << 10

// BodyText is body as text, at most BodyCap bytes of it (cut says so);
// bytes that are not UTF-8 show as U+FFFD. It is the sender's data: show
// it escaped, never as markup.
func BodyText(body []byte) (text string, cut bool) {
	if len(body) > BodyCap {
		body, cut = body[:BodyCap], true
	}
	return strings.ToValidUTF8(string(body), "\uFFFD"), cut
}

// common is what every page shows.
type common struct {
	Title     string
	Table     string
	Tab       string
	NoActions string
}

func (s *Server) common(title, tab string) common {
	return common{Title: title, Table: s.cfg.Ledger.Table(), Tab: tab, NoActions: s.cfg.NoActions}
}

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
	},
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"day": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
	"dur": func(d time.Duration) string {
		switch {
		case d < time.Second:
			return d.Round(time.Millisecond).String()
		case d < time.Minute:
			return d.Round(100 * time.Millisecond).String()
		}
		return d.Round(time.Second).String()
	},
	"sub": func(a, b time.Time) time.Duration { return a.Sub(b) },
	"short": func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		return strings.ToValidUTF8(s[:n], "") + "…"
	},
	"eventURL": eventURL,
	"statuses": func() []ledger.Status {
		return []ledger.Status{ledger.Received, ledger.Processing, ledger.Done, ledger.Failed, ledger.Dead}
	},
}

func eventURL(id ledger.Key) string {
	return "/event?" + url.Values{"source": {id.Source}, "tenant": {id.Tenant}, "id": {id.ID}}.Encode()
}

func (s *Server) parse() error {
	for _, page := range []string{"list", "event", "attention", "confirm", "result", "problem"} {
		t, err := template.New(page).Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			return fmt.Errorf("console: template %s: %w", page, err)
		}
		s.pages[page] = t
	}
	return nil
}

// render writes a page; a template that fails is the console's own bug.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, page string, data any) {
	var b bytes.Buffer
	if err := s.pages[page].ExecuteTemplate(&b, "layout", data); err != nil {
		s.cfg.Log.ErrorContext(r.Context(), "console page failed", "page", page, "error", err.Error())
		http.Error(w, "the console could not render this page (see its log)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// problem renders a page that says what went wrong and what to do next.
func (s *Server) problem(w http.ResponseWriter, r *http.Request, status int, what string) {
	s.render(w, r, status, "problem", struct {
		common
		Problem string
	}{s.common("Problem", ""), what})
}

// listPage is the list of events.
type listPage struct {
	common
	Form    url.Values
	Records []ledger.Record
	Read    int
	Next    string // URL of the next page, "" when none
	Filters bool   // a filter is set (the first page link shows)
	Err     string
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	f := r.URL.Query()
	p := listPage{common: s.common("Events", "list"), Form: f}
	q := ledger.Query{Source: f.Get("source"), Tenant: f.Get("tenant"), Status: ledger.Status(f.Get("status")), Type: f.Get("type"), After: f.Get("after")}
	now := s.cfg.Now()
	var err error
	if q.Since, err = cli.ParseWhen(f.Get("since"), now); err == nil {
		q.Until, err = cli.ParseWhen(f.Get("until"), now)
	}
	if err == nil {
		var page ledger.Page
		page, err = s.cfg.Ledger.Find(r.Context(), q)
		p.Records, p.Read = page.Records, page.Read
		if page.Next != "" {
			next := url.Values{}
			for k, v := range f {
				next[k] = v
			}
			next.Set("after", page.Next)
			p.Next = "/?" + next.Encode()
		}
	}
	status := http.StatusOK
	if err != nil {
		p.Err = err.Error()
		status = http.StatusBadRequest
		if errors.Is(err, ledger.ErrUnavailable) {
			p.Err += " (check the AWS credentials or AWS_ENDPOINT_URL the console was started with)"
			status = http.StatusBadGateway
		}
	}
	for k, v := range f {
		p.Filters = p.Filters || k != "after" && strings.Join(v, "") != ""
	}
	s.render(w, r, status, "list", p)
}

// eventPage is one event's timeline.
type eventPage struct {
	common
	Timeline
	Body       string
	BodyShown  bool
	BodyCut    bool
	BodyErr    string
	BodyURL    string
	Actionable bool // dead or failed: replayable
}

func (s *Server) event(w http.ResponseWriter, r *http.Request) {
	f := r.URL.Query()
	id := ledger.Key{Source: f.Get("source"), Tenant: f.Get("tenant"), ID: f.Get("id")}
	if err := id.Validate(); err != nil {
		s.problem(w, r, http.StatusBadRequest, "An event is known by its source, tenant and id: give all three. ("+err.Error()+")")
		return
	}
	rec, err := s.cfg.Ledger.Get(r.Context(), id)
	if errors.Is(err, ledger.ErrNotFound) {
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("No record for source %q, tenant %q, id %q in table %s. Check the three parts (the list shows them), or it is past its retention.", id.Source, id.Tenant, id.ID, s.cfg.Ledger.Table()))
		return
	}
	if err != nil {
		s.problem(w, r, http.StatusBadGateway, "Reading the record failed: "+err.Error())
		return
	}
	p := eventPage{common: s.common(id.ID, "list"), Timeline: Build(rec, s.cfg.Now()),
		Actionable: rec.Status == ledger.Dead || rec.Status == ledger.Failed}
	p.BodyURL = eventURL(id) + "&body=1#body"
	if f.Get("body") == "1" && s.cfg.Body != nil {
		p.BodyShown = true
		body, err := s.cfg.Body(r.Context(), rec)
		if err != nil {
			p.BodyErr = err.Error()
		} else {
			p.Body, p.BodyCut = BodyText(body)
		}
	}
	s.render(w, r, http.StatusOK, "event", p)
}

// attentionPage lists what needs an operator.
type attentionPage struct {
	common
	Dead      []Timeline
	Next      string
	DLQ       bool   // the dead-letter queue was read
	DLQOut    string // what a redrive would do, message by message
	DLQErr    string
	NoRedrive string
	Err       string
}

func (s *Server) attention(w http.ResponseWriter, r *http.Request) {
	f := r.URL.Query()
	p := attentionPage{common: s.common("Needs an operator", "attention"), NoRedrive: s.cfg.NoRedrive}
	if s.cfg.Actions == nil {
		p.NoRedrive = s.cfg.NoActions
	}
	page, err := s.cfg.Ledger.Find(r.Context(), ledger.Query{Status: ledger.Dead, After: f.Get("after")})
	if err != nil {
		p.Err = err.Error()
	}
	for _, rec := range page.Records {
		p.Dead = append(p.Dead, Build(rec, s.cfg.Now()))
	}
	if page.Next != "" {
		p.Next = "/attention?" + url.Values{"after": {page.Next}}.Encode()
	}
	if f.Get("dlq") == "1" && p.NoRedrive == "" {
		p.DLQ = true
		p.DLQOut, err = s.cfg.Actions.Redrive(r.Context(), true)
		if err != nil {
			p.DLQErr = err.Error()
		}
	}
	s.render(w, r, http.StatusOK, "attention", p)
}

// actionForm is an action's fields, as the confirmation page posts them.
type actionForm struct {
	Action                   string // "replay" or "redrive"
	Source, Tenant, ID, Step string
	How                      string // with Step: "done" or "rerun"
	Result                   string
	Token                    string
}

func formOf(v url.Values) actionForm {
	return actionForm{Action: v.Get("action"), Source: v.Get("source"), Tenant: v.Get("tenant"), ID: v.Get("id"),
		Step: v.Get("step"), How: v.Get("how"), Result: v.Get("result"), Token: v.Get("token")}
}

func (f actionForm) key() ledger.Key { return ledger.Key{Source: f.Source, Tenant: f.Tenant, ID: f.ID} }

// check refuses a form no action fits.
func (f actionForm) check() error {
	switch f.Action {
	case "redrive":
		if f.Source+f.Tenant+f.ID+f.Step+f.How+f.Result != "" {
			return errors.New("a redrive moves the whole dead-letter queue; it takes no event")
		}
		return nil
	case "replay":
	default:
		return fmt.Errorf("unknown action %q: the console replays events and redrives the dead-letter queue", f.Action)
	}
	if err := f.key().Validate(); err != nil {
		return fmt.Errorf("a replay needs the event's source, tenant and id: %w", err)
	}
	switch {
	case f.Step == "" && (f.How != "" || f.Result != ""):
		return errors.New("say which step to resolve")
	case f.Step != "" && f.How != "done" && f.How != "rerun":
		return errors.New("resolve a step by marking it done (its effect happened) or running it again (it did not)")
	case f.Result != "" && f.How != "done":
		return errors.New("a result goes with marking a step done")
	}
	return nil
}

func (s *Server) run(r *http.Request, f actionForm, dry bool) (string, error) {
	if f.Action == "redrive" {
		return s.cfg.Actions.Redrive(r.Context(), dry)
	}
	return s.cfg.Actions.Replay(r.Context(), Replay{ID: f.key(), Step: f.Step, MarkDone: f.How == "done", Result: f.Result}, dry)
}

// confirmPage shows what an action would do, and asks.
type confirmPage struct {
	common
	Form   actionForm
	DryRun string
	Err    string
	Back   string
}

func (s *Server) back(f actionForm) string {
	if f.Action == "replay" {
		return eventURL(f.key())
	}
	return "/attention"
}

func (s *Server) confirm(w http.ResponseWriter, r *http.Request) {
	f := formOf(r.URL.Query())
	if s.cfg.Actions == nil {
		s.problem(w, r, http.StatusForbidden, s.cfg.NoActions)
		return
	}
	if f.Action == "redrive" && s.cfg.NoRedrive != "" {
		s.problem(w, r, http.StatusForbidden, s.cfg.NoRedrive)
		return
	}
	if err := f.check(); err != nil {
		s.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	f.Token = s.token(f)
	p := confirmPage{common: s.common("Confirm", ""), Form: f, Back: s.back(f)}
	out, err := s.run(r, f, true)
	p.DryRun = out
	if err != nil {
		p.Err = err.Error()
	}
	s.render(w, r, http.StatusOK, "confirm", p)
}

// resultPage says what an action did.
type resultPage struct {
	common
	Form   actionForm
	Output string
	Err    string
	Back   string
}

// maxForm bounds an action's form.
const maxForm = 16 << 10

func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		s.problem(w, r, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return
	}
	f := formOf(r.PostForm)
	switch {
	case f.Token == "" || !hmac.Equal([]byte(f.Token), []byte(s.token(f))):
		s.problem(w, r, http.StatusForbidden, "Refused: the confirmation is not this console's, or it changed (a console restarted since gives new ones). Open the event again and confirm from there.")
		return
	case s.cfg.Actions == nil:
		s.problem(w, r, http.StatusForbidden, s.cfg.NoActions)
		return
	}
	if err := f.check(); err != nil {
		s.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	out, err := s.run(r, f, false)
	p := resultPage{common: s.common("Done", ""), Form: f, Output: out, Back: s.back(f)}
	status := http.StatusOK
	if err != nil {
		p.Err, status = err.Error(), http.StatusConflict
	}
	s.cfg.Log.InfoContext(r.Context(), "console action", "action", f.Action, "source", f.Source, "tenant", f.Tenant, "event_id", f.ID, "step", f.Step, "how", f.How, "ok", err == nil)
	s.render(w, r, status, "result", p)
}
