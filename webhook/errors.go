package webhook

import "errors"

// Sentinel errors. Every error from Verify wraps exactly one of them, with
// detail added by fmt.Errorf (a failure after a valid signature also wraps
// ErrNoKey); callers branch with errors.Is.
var (
	// ErrMissingHeader means a signature, timestamp or id header is absent.
	ErrMissingHeader = errors.New("missing header")
	// ErrMalformedHeader means a header is present but cannot be parsed.
	ErrMalformedHeader = errors.New("malformed header")
	// ErrRepeatedHeader means a header the scheme reads once came more than
	// once: as two lines, as a gateway's comma-joined value, or under two
	// spellings that disagree. The error is a *RepeatedHeaderError.
	ErrRepeatedHeader = errors.New("repeated header")
	// ErrBadSignature means no signature in the request matched any secret.
	ErrBadSignature = errors.New("bad signature")
	// ErrOutsideTolerance means the signed timestamp is too old or too far in
	// the future.
	ErrOutsideTolerance = errors.New("timestamp outside tolerance")
	// ErrMalformedBody means the scheme needs a JSON body and the body is not.
	ErrMalformedBody = errors.New("malformed body")
	// ErrNoKey means the signature is valid but no idempotency key is given
	// or derivable. Only failures after the signature checked out wrap it.
	ErrNoKey = errors.New("no idempotency key")
	// ErrNoSecret means no usable secret was given: a configuration issue,
	// but the delivery is never accepted.
	ErrNoSecret = errors.New("no secret")
)

// RepeatedHeaderError is the ErrRepeatedHeader of one header.
type RepeatedHeaderError struct {
	Header string // the header's name, as the scheme spells it (X-GitHub-Delivery)
	Detail string // how it was repeated, for logs
}

func (e *RepeatedHeaderError) Error() string {
	if e.Detail == "" {
		return e.Header + ": " + ErrRepeatedHeader.Error()
	}
	return e.Header + ": " + e.Detail + ": " + ErrRepeatedHeader.Error()
}

// Unwrap makes errors.Is(err, ErrRepeatedHeader) hold.
func (e *RepeatedHeaderError) Unwrap() error { return ErrRepeatedHeader }
