package hookledger

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// Settings are your effects' own settings: the URLs and keys of the APIs
// they call. Register reads each one it needs once, at cold start, by name:
//
//	func Register(r *hookledger.Router, s *hookledger.Settings) error {
//		mailer := &Mailer{BaseURL: s.URL("MAILER_URL"), Key: s.String("MAILER_KEY")}
//		...
//		return s.Err()
//	}
//
// Deployed, the values come from one JSON object, the template's
// EffectSettings parameter (per environment in samconfig.toml). A value
// written as a secret reference ("ssm:/hookledger/prod/mailer-key",
// "secretsmanager:...") is read at cold start, so keys never sit in the
// function's configuration. Locally (hookledger dev), a setting is the
// environment variable of its name, or a member of
// HOOKLEDGER_EFFECT_SETTINGS. Tests use SettingsMap.
//
// A missing or invalid setting is never skipped: Err names each one, the
// line that read it and where to set it. The processor does not start
// until Err is nil, so events wait in the queue while the fix is deployed.
type Settings struct {
	lookup func(name string) (string, error)
	where  string

	mu   sync.Mutex
	read map[string]bool
	errs []error
}

// newSettings returns settings read through lookup: "" for one not set,
// an error for one that cannot be read. where says where to set one.
func newSettings(lookup func(name string) (string, error), where string) *Settings {
	return &Settings{lookup: lookup, where: where, read: map[string]bool{}}
}

// SettingsMap returns settings with the values of m, for tests.
func SettingsMap(m map[string]string) *Settings {
	return newSettings(func(name string) (string, error) { return m[name], nil }, "the test's settings map")
}

// String returns the setting name, which must be set and not blank.
func (s *Settings) String(name string) string {
	v, ok := s.get(name)
	if !ok {
		s.fail(name, "is missing")
	}
	return v
}

// Optional returns the setting name, or def when it is not set.
func (s *Settings) Optional(name, def string) string {
	if v, ok := s.get(name); ok {
		return v
	}
	return def
}

// URL returns the setting name, which must be an absolute http or https
// URL such as https://api.example.com.
func (s *Settings) URL(name string) string {
	v, ok := s.get(name)
	if !ok {
		s.fail(name, "is missing")
		return ""
	}
	if problem := urlProblem(v); problem != "" {
		s.fail(name, problem+": want an http or https URL such as https://api.example.com")
		return ""
	}
	return v
}

// urlProblem says what keeps v from being an absolute http or https URL,
// or "". It never quotes v: a setting may be a secret, and errors are logged.
func urlProblem(v string) string {
	u, err := url.Parse(v)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return ""
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\n' && i == len(v)-1:
			return fmt.Sprintf("ends with a newline (byte %d): store the value without it (one put from a file keeps the file's last newline)", i)
		case c == '\n':
			return fmt.Sprintf("contains a newline at byte %d", i)
		case c < 0x20 || c == 0x7f:
			return fmt.Sprintf("contains a control character (0x%02x) at byte %d", c, i)
		}
	}
	switch {
	case err != nil && strings.Contains(v, " "):
		return fmt.Sprintf("contains a space at byte %d", strings.Index(v, " "))
	case err != nil:
		return fmt.Sprintf("is not a URL (%d bytes)", len(v))
	case u.Scheme == "":
		return "has no scheme"
	case u.Scheme != "http" && u.Scheme != "https":
		return "has a scheme other than http or https"
	}
	return "has no host"
}

// names lists the settings read so far, sorted.
func (s *Settings) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.read))
	for n := range s.read {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Err reports every setting read so far that was missing or invalid, each
// naming where it was read and where to set it; nil when all were fine.
func (s *Settings) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

// get returns the setting's value; ok is false when it is unset, blank or
// unreadable (which get records).
func (s *Settings) get(name string) (string, bool) {
	s.mu.Lock()
	s.read[name] = true
	s.mu.Unlock()
	if s.lookup == nil {
		return "", false
	}
	v, err := s.lookup(name)
	if err != nil {
		s.failAt(name, "could not be read: "+err.Error(), 3)
		return "", false
	}
	if strings.TrimSpace(v) == "" {
		return "", false
	}
	return v, true
}

// fail records a problem with name, at the effect code that read it.
func (s *Settings) fail(name, problem string) { s.failAt(name, problem, 3) }

func (s *Settings) failAt(name, problem string, skip int) {
	s.mu.Lock()
	for _, e := range s.errs {
		if strings.HasPrefix(e.Error(), "effect setting "+name+" ") {
			s.mu.Unlock()
			return // once per setting, however often it is read
		}
	}
	s.mu.Unlock()
	at := ""
	if _, file, line, ok := runtime.Caller(skip); ok {
		at = fmt.Sprintf(" (read at %s/%s:%d)", path.Base(path.Dir(file)), path.Base(file), line)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Errorf("effect setting %s %s%s: set it in %s", name, problem, at, s.where))
}
