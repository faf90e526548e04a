package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// headerValues returns every non-blank value of the named headers, trimmed.
// Keys are matched without regard to case, so a header map that was not
// canonicalised (API Gateway lowercases names) still works.
func headerValues(h http.Header, names ...string) []string {
	var out []string
	for k, vs := range h {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(k, n) }) {
			continue
		}
		for _, v := range vs {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// singleValue returns the one non-empty value of the named headers. Absent or
// empty: ErrMissingHeader. Several different values: ErrMalformedHeader, as the
// request is ambiguous.
func singleValue(h http.Header, names ...string) (string, error) {
	var got string
	for _, v := range headerValues(h, names...) {
		switch {
		case got == "":
			got = v
		case got != v:
			return "", fmt.Errorf("%s: several different values: %w", names[0], ErrMalformedHeader)
		}
	}
	if got == "" {
		return "", fmt.Errorf("%s: %w", names[0], ErrMissingHeader)
	}
	return got, nil
}

// maxUnixDigits bounds a timestamp to 12 decimal digits (seconds up to the
// year 33658), which keeps time arithmetic far from overflow and rejects
// millisecond timestamps sent by mistake.
const maxUnixDigits = 12

// parseUnix parses a Unix timestamp in seconds: decimal digits only, no sign.
func parseUnix(s string) (int64, error) {
	if s == "" || len(s) > maxUnixDigits {
		return 0, fmt.Errorf("timestamp %q: want 1 to %d digits: %w", clip(s), maxUnixDigits, ErrMalformedHeader)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("timestamp %q: want decimal digits: %w", clip(s), ErrMalformedHeader)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("timestamp %q: %w", clip(s), ErrMalformedHeader)
	}
	return n, nil
}

// checkTolerance rejects a signed timestamp more than tol before or after now.
func checkTolerance(ts int64, now time.Time, tol time.Duration) error {
	t := time.Unix(ts, 0)
	if d := now.Sub(t); d > tol {
		return fmt.Errorf("timestamp %d is %s old, tolerance %s: %w", ts, d.Truncate(time.Second), tol, ErrOutsideTolerance)
	}
	if d := t.Sub(now); d > tol {
		return fmt.Errorf("timestamp %d is %s in the future, tolerance %s: %w", ts, d.Truncate(time.Second), tol, ErrOutsideTolerance)
	}
	return nil
}

// validHeaderName reports whether s is an RFC 9110 token, usable as a header
// field name.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// clip shortens attacker-controlled text before it goes into an error message.
func clip(s string) string {
	const limit = 40
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}

// signTimestamp is m.Now as Unix seconds, for Sign.
func signTimestamp(m Message) (string, error) {
	if m.Now.IsZero() || m.Now.Unix() < 0 {
		return "", errors.New("message needs a time (Now) after 1970")
	}
	return strconv.FormatInt(m.Now.Unix(), 10), nil
}

// errorsIsMissing reports whether err says a header is absent.
func errorsIsMissing(err error) bool {
	return errors.Is(err, ErrMissingHeader)
}
