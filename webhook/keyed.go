package webhook

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// keyedHeader describes a signature header made of key=value elements with
// one timestamp and one or more hex signatures, the form Stripe
// ("t=…,v1=…,v1=…") and Paddle ("ts=…;h1=…;h1=…") share.
type keyedHeader struct {
	name   string // header name, for errors
	sep    string // element separator
	tsKey  string // the timestamp's key
	sigKey string // the signatures' key; other keys are ignored
	sigLen int    // required signature length in bytes; 0 accepts any non-empty one
}

// parse reads the header's value. It needs exactly one timestamp and at
// least one usable signature; entries that are not hex (either case, as
// stripe-go and Paddle's SDK decode it) or of the wrong length are skipped.
// A second timestamp is a *RepeatedHeaderError: two headers joined into one
// value, as API Gateway joins them.
func (f keyedHeader) parse(value string) (ts string, timestamp int64, sigs [][]byte, err error) {
	seenTS := false
	for elem := range strings.SplitSeq(value, f.sep) {
		elem = strings.TrimSpace(elem)
		if elem == "" {
			continue
		}
		k, val, ok := strings.Cut(elem, "=")
		if !ok {
			return "", 0, nil, fmt.Errorf("%s: element %q is not key=value: %w", f.name, clip(elem), ErrMalformedHeader)
		}
		switch k {
		case f.tsKey:
			if seenTS {
				return "", 0, nil, &RepeatedHeaderError{Header: f.name, Detail: "two " + f.tsKey + " elements"}
			}
			seenTS, ts = true, val
		case f.sigKey:
			sig, ok := decodeHex(val)
			if !ok || len(sig) == 0 || (f.sigLen > 0 && len(sig) != f.sigLen) {
				continue
			}
			sigs = append(sigs, sig)
		}
	}
	if ts == "" {
		return "", 0, nil, fmt.Errorf("%s: no %s timestamp: %w", f.name, f.tsKey, ErrMalformedHeader)
	}
	t, err := parseUnix(ts)
	if err != nil {
		return "", 0, nil, fmt.Errorf("%s: %w", f.name, err)
	}
	if len(sigs) == 0 {
		return "", 0, nil, fmt.Errorf("%s: no %s signature: %w", f.name, f.sigKey, ErrMalformedHeader)
	}
	return ts, t, sigs, nil
}

// format writes a header value with the timestamp first.
func (f keyedHeader) format(ts string, sigs [][]byte) string {
	var b strings.Builder
	b.WriteString(f.tsKey + "=" + ts)
	for _, s := range sigs {
		b.WriteString(f.sep + f.sigKey + "=" + hex.EncodeToString(s))
	}
	return b.String()
}
