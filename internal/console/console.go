// Package console is hookledger's local web page over the ledger: events by
// source, tenant, status, type and time, one event's timeline, the dead and
// parked events an operator must resolve, and the CLI's replay actions
// behind a confirmation. Pages are rendered on the server with html/template
// (everything from the ledger is escaped; a body is shown only on request,
// as text), with one small script and a strict Content-Security-Policy.
// Actions are POSTs from the page's own origin (net/http's
// CrossOriginProtection, and a Host check against DNS rebinding) that carry
// a token only the page can have.
package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hookledger/hookledger/ledger"
)

//go:embed templates/*.html static/*
var files embed.FS

// Ledger is what the pages read.
type Ledger interface {
	Find(ctx context.Context, q ledger.Query) (ledger.Page, error)
	Get(ctx context.Context, id ledger.Key) (ledger.Record, error)
	Table() string
}

// Replay is one replay: an event, and a step to resolve first (Step "":
// none). MarkDone records the step done with Result; otherwise it runs
// again.
type Replay struct {
	ID       ledger.Key
	Step     string
	MarkDone bool
	Result   string
}

// Actions are the CLI's replay actions. Each returns what the CLI prints;
// dry says what would be done and changes nothing. An error means the
// action did not (or would not) do all it says; the output says why.
type Actions interface {
	Replay(ctx context.Context, r Replay, dry bool) (string, error)
	// Redrive moves the dead-letter queue's messages back to the
	// processing queue, leaving (and listing) those the ledger cannot use:
	// parked, unreadable, or past retention.
	Redrive(ctx context.Context, dry bool) (string, error)
}

// Config is what a Server needs.
type Config struct {
	Ledger Ledger
	// Body reads a record's stored body (nil: bodies are not shown).
	Body func(ctx context.Context, rec ledger.Record) ([]byte, error)
	// Actions, nil: the pages only read. NoActions says why.
	Actions   Actions
	NoActions string
	// Redrive is off, with the reason, when no dead-letter queue is known.
	NoRedrive string
	// Hosts are the Host header values the console answers (its address,
	// as a browser names it); any other is refused, against DNS rebinding.
	Hosts []string
	Log   *slog.Logger
	Now   func() time.Time
}

// Server serves the console.
type Server struct {
	cfg    Config
	secret []byte
	pages  map[string]*template.Template
	mux    *http.ServeMux
	csrf   *http.CrossOriginProtection
}

// The response headers of every page: only the console's own script and
// style run, nothing frames it, and nothing is sniffed or cached.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// New returns a console with a fresh secret for its action tokens.
func New(cfg Config) (*Server, error) {
	if cfg.Ledger == nil {
		return nil, errors.New("console: no ledger")
	}
	if len(cfg.Hosts) == 0 {
		return nil, errors.New("console: no hosts to answer")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, secret: make([]byte, 32), pages: map[string]*template.Template{}, csrf: http.NewCrossOriginProtection()}
	rand.Read(s.secret)
	if err := s.parse(); err != nil {
		return nil, err
	}
	static, _ := fs.Sub(files, "static")
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /{$}", s.list)
	s.mux.HandleFunc("GET /event", s.event)
	s.mux.HandleFunc("GET /attention", s.attention)
	s.mux.HandleFunc("GET /confirm", s.confirm)
	s.mux.HandleFunc("POST /act", s.act)
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	return s, nil
}

// ServeHTTP answers a request after the checks every page shares.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !s.hostAllowed(r.Host) {
		http.Error(w, "this console answers only at its own address (a page elsewhere tried to reach it)", http.StatusMisdirectedRequest)
		return
	}
	s.csrf.Handler(s.mux).ServeHTTP(w, r)
}

func (s *Server) hostAllowed(host string) bool {
	for _, h := range s.cfg.Hosts {
		if h == AnyHost || strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// AnyHost in Config.Hosts answers every Host: for a console listening on
// every address, whose names it cannot know.
const AnyHost = "*"

// Hosts are the Host values a browser sends to a console listening on
// addr: the address itself and, on a loopback address, localhost; on an
// unspecified address (0.0.0.0), any.
func Hosts(addr net.Addr) []string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return []string{addr.String()}
	}
	if tcp.IP.IsUnspecified() {
		return []string{AnyHost}
	}
	port := fmt.Sprint(tcp.Port)
	out := []string{net.JoinHostPort(tcp.IP.String(), port)}
	if tcp.IP.IsLoopback() {
		out = append(out, net.JoinHostPort("localhost", port), net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("::1", port))
	}
	return out
}

// token is the action's CSRF token: an HMAC of the action and every field
// it acts on, under the process's secret. Only a page this process served
// holds one, and it fits that action alone.
func (s *Server) token(f actionForm) string {
	m := hmac.New(sha256.New, s.secret)
	for _, v := range []string{f.Action, f.Source, f.Tenant, f.ID, f.Step, f.How, f.Result} {
		m.Write([]byte(v))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil))
}
