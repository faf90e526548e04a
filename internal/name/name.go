// Package name holds the rules for the names and texts the pipeline carries,
// each in one place: what a source or tenant name, a step name, an event id
// and an event type may be. The router, the sources config, the receiver,
// the step engine and the ledger all ask here, so a name one of them accepts
// is never refused by another.
package name

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// MaxSource bounds a source or tenant name: it is a URL path segment and
// part of the ledger key.
const MaxSource = 64

// MaxStep bounds a step name: the name is an attribute of the event's
// record, which stays under 1 KB.
const MaxStep = 64

// MaxType bounds an event type. Real types are a few dozen bytes
// (invoice.paid, pull_request, orders/create); the type rides in the record,
// the message and every log line, and a signed body can carry any string
// there, so a long one is refused before anything is written.
const MaxType = 256

// identifier is a source, tenant or step name: letters, digits, '.', '_' and
// '-', starting with a letter or digit, at most 64 bytes.
var identifier = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Source reports whether s may name a source or tenant.
func Source(s string) bool { return identifier.MatchString(s) }

// Step reports whether s may name a step.
func Step(s string) bool { return identifier.MatchString(s) }

// ForwardSource starts the EventBridge "source" of every event hookledger
// forwards: "hookledger." and the source's name ("hookledger.stripe"). The
// bus door takes no EventBridge source that starts so.
const ForwardSource = "hookledger."

// SourceRule and StepRule say in words what Source and Step accept, for
// error messages.
const (
	SourceRule = "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
	StepRule   = SourceRule
)

// CheckText refuses an event id or type the pipeline cannot carry
// faithfully: invalid UTF-8 (DynamoDB refuses it); U+FFFE and U+FFFF, which
// the queue message would carry raw and SQS refuses; U+FFFD, which is what a
// JSON decoder makes of a lone UTF-16 surrogate escape ("\ud800" and
// "\udbff" would both become it, so two event ids would share one key); and
// control characters other than tab, CR and LF, which JSON would escape but
// which no event id or type has.
func CheckText(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("not valid UTF-8")
	}
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			return fmt.Errorf("U+FFFD at byte %d: a lone surrogate or a replacement character cannot identify an event", i)
		case r == 0xFFFE || r == 0xFFFF:
			return fmt.Errorf("non-character U+%04X at byte %d (SQS refuses it)", r, i)
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r':
			return fmt.Errorf("control character U+%04X at byte %d", r, i)
		}
	}
	return nil
}

// CheckType is CheckText for an event type, which is also at most MaxType
// bytes.
func CheckType(t string) error {
	if len(t) > MaxType {
		return fmt.Errorf("%d bytes, over %d", len(t), MaxType)
	}
	return CheckText(t)
}

// escaper makes the joined identity injective: "%" becomes "%25" and "#"
// becomes "%23" in each part before the parts are joined with "#".
var escaper = strings.NewReplacer("%", "%25", "#", "%23")

// unescaper inverts escaper.
var unescaper = strings.NewReplacer("%23", "#", "%25", "%")

// EventKey is an event's identity (source, tenant, event id) as one string:
// the ledger's partition key, and what every downstream idempotency key is
// derived from. No two different identities give one key. It never
// changes: downstream keys derived from it must stay the same for events
// already processed.
func EventKey(source, tenant, id string) string {
	return "ev#" + escaper.Replace(source) + "#" + escaper.Replace(tenant) + "#" + escaper.Replace(id)
}

// ParseEventKey inverts EventKey; ok is false for a string EventKey cannot
// have made.
func ParseEventKey(k string) (source, tenant, id string, ok bool) {
	rest, ok := strings.CutPrefix(k, "ev#")
	parts := strings.Split(rest, "#")
	if !ok || len(parts) != 3 {
		return "", "", "", false
	}
	return unescaper.Replace(parts[0]), unescaper.Replace(parts[1]), unescaper.Replace(parts[2]), true
}

// Escape is one part of a joined key, escaped as EventKey escapes each part,
// for other keys joined with "#" (the replay guard's).
func Escape(part string) string { return escaper.Replace(part) }
