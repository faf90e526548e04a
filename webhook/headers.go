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

// singleValue returns the trimmed value of a header the scheme reads once,
// whose value never holds a comma. names are the spellings of that one
// header (Webhook-Id and Svix-Id), matched in any case: API Gateway
// lowercases names.
//
// Absent or blank is ErrMissingHeader. A *RepeatedHeaderError is two lines
// under one spelling, a value holding a comma (API Gateway and hookledger
// dev join repeated headers with commas), or two spellings that disagree.
// The same value under two spellings is one header sent twice on purpose,
// as Shopify and Svix do while they move to new names.
func singleValue(h http.Header, names ...string) (string, error) {
	v, _, err := readOnce(h, false, names...)
	return v, err
}

// listValue is singleValue for a header whose value may hold commas
// (Stripe-Signature "t=…,v1=…"): the scheme's parser finds a comma-joined
// repetition by the value's format.
func listValue(h http.Header, names ...string) (string, error) {
	v, _, err := readOnce(h, true, names...)
	return v, err
}

// readOnce is singleValue (commas false) or listValue (commas true), and
// also returns the spelling the value came under.
func readOnce(h http.Header, commas bool, names ...string) (value, name string, err error) {
	var got, from string
	lines := make([]int, len(names))
	for k, vs := range h {
		i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(k, n) })
		if i < 0 {
			continue
		}
		for _, v := range vs {
			lines[i]++
			if lines[i] > 1 {
				return "", "", &RepeatedHeaderError{Header: names[i], Detail: "more than one line"}
			}
			v = strings.TrimSpace(v)
			if !commas && strings.Contains(v, ",") {
				return "", "", &RepeatedHeaderError{Header: names[i], Detail: "a comma in a value that never holds one"}
			}
			switch {
			case v == "":
			case got == "":
				got, from = v, names[i]
			case got != v:
				return "", "", &RepeatedHeaderError{Header: names[0], Detail: fmt.Sprintf("%s and %s disagree", from, names[i])}
			}
		}
	}
	if got == "" {
		return "", "", fmt.Errorf("%s: %w", names[0], ErrMissingHeader)
	}
	return got, from, nil
}

// maxUnixDigits bounds a timestamp to 12 digits (seconds up to the year
// 33658): far from overflow, and milliseconds sent by mistake are refused.
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

// validHeaderName reports whether s is an RFC 9110 token, a header name.
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

// errorsIsMissing reports whether err says a header is absent.
func errorsIsMissing(err error) bool {
	return errors.Is(err, ErrMissingHeader)
}
