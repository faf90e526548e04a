package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// canonical encodes v as canonical JSON, the text keys and validation
// digests are taken over: v's encoding/json encoding, with object members
// sorted by name, no insignificant whitespace, no HTML escaping, and numbers
// normalised (integers as written, "-0" as "0"; anything else through
// float64, so 1.0, 1e0 and 1 are one number, while 0.1 and 0.10 are too).
// A Go value and the same value decoded from any JSON spelling therefore
// give the same key.
func canonical(v any) ([]byte, error) {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	return canonicalRaw(raw)
}

// canonicalRaw re-encodes JSON text canonically.
func canonicalRaw(raw []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var t any
	if err := d.Decode(&t); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, t); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(x))
	case json.Number:
		buf.WriteString(canonicalNumber(string(x)))
	case string:
		writeString(buf, x)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			if err := writeCanonical(buf, x[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("unexpected JSON value %T", v)
	}
	return nil
}

func writeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s)               // cannot fail for a string
	buf.Truncate(buf.Len() - 1) // Encode appends a newline
}

// canonicalNumber normalises a JSON number literal without big-number
// arithmetic (a literal such as 1e999999999 must stay cheap).
func canonicalNumber(lit string) string {
	if !strings.ContainsAny(lit, ".eE") {
		if lit == "-0" {
			return "0"
		}
		return lit
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		return strings.ToLower(lit) // out of float64's range: keep it as written
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// digest is the hex SHA-256 of canonical JSON.
func digest(canon []byte) string {
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// missing reports whether a selected value counts as no key: null, "",
// [], {}, or an array whose members are all missing. 0 and false are keys.
func missing(canon []byte) bool {
	switch string(canon) {
	case "null", `""`, "[]", "{}":
		return true
	}
	if len(canon) > 0 && canon[0] == '[' {
		var xs []json.RawMessage
		if json.Unmarshal(canon, &xs) != nil {
			return false
		}
		for _, x := range xs {
			if !missing(x) {
				return false
			}
		}
		return true
	}
	return false
}
