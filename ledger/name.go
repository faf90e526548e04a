package ledger

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The rules for names and texts the ledger stores, each in one place. The
// router, the sources config, the receiver and the step engine ask here,
// so a name one accepts is never refused by another.

// MaxType bounds an event type. Real types are a few dozen bytes, but a
// signed body can carry any string, and the type rides in the record, the
// message and every log line.
const MaxType = 256

// namePattern is a source, tenant or step name: letters, digits, '.', '_' and '-',
// starting with a letter or digit, at most 64 bytes (MaxStepName).
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// NameRule says in words what ValidName and ValidStepName accept, for
// error messages.
const NameRule = "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"

// ValidName reports whether s may name a source or a tenant (NameRule): it
// is a URL path segment and part of the event's key.
func ValidName(s string) bool { return namePattern.MatchString(s) }

// ErrText marks an event id or type with characters the pipeline cannot
// carry faithfully (CheckText).
var ErrText = errors.New("characters the pipeline cannot carry")

// CheckText refuses, with ErrText, an event id or type the pipeline cannot
// carry faithfully: invalid UTF-8 (DynamoDB refuses it); U+FFFE and U+FFFF,
// which the queue message would carry raw and SQS refuses; U+FFFD, which
// is what a JSON decoder makes of a lone UTF-16 surrogate escape ("\ud800"
// and "\udbff" would both become it, so two event ids would share one
// key); and control characters other than tab, CR and LF, which no event id
// or type has.
func CheckText(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: not valid UTF-8", ErrText)
	}
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			return fmt.Errorf("%w: U+FFFD at byte %d: a lone surrogate or a replacement character cannot identify an event", ErrText, i)
		case r == 0xFFFE || r == 0xFFFF:
			return fmt.Errorf("%w: non-character U+%04X at byte %d (SQS refuses it)", ErrText, r, i)
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r':
			return fmt.Errorf("%w: control character U+%04X at byte %d", ErrText, r, i)
		}
	}
	return nil
}

// CheckType is CheckText for an event type, which is also at most MaxType
// bytes. The characters are checked first: an error without ErrText is a
// type too long.
func CheckType(t string) error {
	if err := CheckText(t); err != nil {
		return err
	}
	if len(t) > MaxType {
		return fmt.Errorf("%d bytes, over %d", len(t), MaxType)
	}
	return nil
}

// escaper makes a joined key injective: "%" becomes "%25" and "#" becomes
// "%23" in each part before the parts are joined with "#".
var escaper = strings.NewReplacer("%", "%25", "#", "%23")

// unescaper inverts escaper.
var unescaper = strings.NewReplacer("%23", "#", "%25", "%")

// escape is one part of a key joined with "#" (ID.PK, the replay guard's,
// the order item's).
func escape(part string) string { return escaper.Replace(part) }
