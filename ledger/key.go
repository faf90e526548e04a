package ledger

import (
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
	"unicode/utf8"
)

// MaxPartLen bounds each of source, tenant and key.
const MaxPartLen = 512

// MaxPKBytes is DynamoDB's limit on a partition key value. Escaping can
// triple a part ("#" is stored as "%23"), so Validate checks the encoded
// key too.
const MaxPKBytes = 2048

// Key is an event's identity: who sent it (source), for whom (tenant), and
// the sender's event id or a derived one.
type Key struct {
	Source string `json:"source"`
	Tenant string `json:"tenant"`
	ID     string `json:"event_id"`
}

// NewKey is the door of a new event's identity: it checks, once, every rule
// the ledger, the queue and the logs need of the three parts. Its errors
// wrap ErrInvalid, and also ErrText for characters the pipeline cannot
// carry (CheckText, checked before the sizes).
func NewKey(source, tenant, key string) (Key, error) {
	id := Key{Source: source, Tenant: tenant, ID: key}
	for _, p := range id.parts() {
		if err := CheckText(p.v); err != nil {
			return Key{}, fmt.Errorf("%w: %s: %w", ErrInvalid, p.name, err)
		}
	}
	if err := id.Validate(); err != nil {
		return Key{}, err
	}
	return id, nil
}

// Validate guards a Key built by hand (a literal, a command's arguments).
// It reports an empty or over-long part, invalid UTF-8 (the SDK would send
// U+FFFD, so two ids would share a record), and an encoded key over
// MaxPKBytes. NewKey checks all of it, and more.
func (id Key) Validate() error { return id.check(id.PK()) }

// check is Validate for a caller that has encoded pk already.
func (id Key) check(pk string) error {
	for _, p := range id.parts() {
		if p.v == "" {
			return fmt.Errorf("%w: %s is empty", ErrInvalid, p.name)
		}
		if len(p.v) > MaxPartLen {
			return fmt.Errorf("%w: %s is %d bytes, over %d", ErrInvalid, p.name, len(p.v), MaxPartLen)
		}
		if !utf8.ValidString(p.v) {
			return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, p.name)
		}
	}
	if len(pk) > MaxPKBytes {
		return fmt.Errorf("%w: encoded key is %d bytes, over DynamoDB's %d-byte partition key limit", ErrInvalid, len(pk), MaxPKBytes)
	}
	return nil
}

func (id Key) parts() [3]struct{ name, v string } {
	return [3]struct{ name, v string }{{"source", id.Source}, {"tenant", id.Tenant}, {"key", id.ID}}
}

// String is the identity as logged: source/tenant/key.
func (id Key) String() string { return id.Source + "/" + id.Tenant + "/" + id.ID }

// PK is the stored partition key: "ev#", then source, tenant and key, each
// escaped ("%" as "%25", "#" as "%23") and joined by "#", so no two
// identities share one. Downstream idempotency keys derive from it, so it
// never changes.
func (id Key) PK() string {
	return "ev#" + escape(id.Source) + "#" + escape(id.Tenant) + "#" + escape(id.ID)
}

// ParsePK inverts Key.PK.
func ParsePK(pk string) (Key, error) {
	rest, ok := strings.CutPrefix(pk, "ev#")
	parts := strings.Split(rest, "#")
	if !ok || len(parts) != 3 {
		return Key{}, fmt.Errorf("%w: %q is not a ledger key", ErrInvalid, pk)
	}
	return Key{Source: unescaper.Replace(parts[0]), Tenant: unescaper.Replace(parts[1]), ID: unescaper.Replace(parts[2])}, nil
}

// shardOf spreads records over the due index's partitions.
func shardOf(pk string, shards int) int {
	h := fnv.New32a()
	h.Write([]byte(pk))
	return int(h.Sum32() % uint32(shards))
}

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
