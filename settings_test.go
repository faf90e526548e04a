package hookledger_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hookledger/hookledger"
)

// secretLike is a value no error may quote: settings are often secrets.
const secretLike = "sk_live_51SettingsLeakCanary"

// A URL setting that is not a URL is described, never quoted: the value
// may be a secret read from a store, and the error goes to the log.
// Before, the error quoted the whole value.
func TestSettingsURLErrorsDescribeAndNeverQuoteTheValue(t *testing.T) {
	t.Parallel()
	fromFile := "https://user:" + secretLike + "@pay.example.com/\n"
	for _, tc := range []struct{ value, want string }{
		{fromFile, fmt.Sprintf("ends with a newline (byte %d)", len(fromFile)-1)},
		{"https://pay.example.com/\n?key=" + secretLike, "contains a newline at byte 24"},
		{"https://pay.example.com/?key=" + secretLike + "\r", "contains a control character (0x0d)"},
		{"https://pay example.com/" + secretLike, "contains a space at byte 11"},
		{"http://[" + secretLike, "is not a URL"},
		{secretLike, "has no scheme"},
		{"ftp://" + secretLike + "@files.example.com", "has a scheme other than http or https"},
		{"https:///" + secretLike, "has no host"},
	} {
		s := hookledger.SettingsMap(map[string]string{"PAYMENTS_URL": tc.value})
		if got := s.URL("PAYMENTS_URL"); got != "" {
			t.Errorf("%q: URL returned %q, want \"\"", tc.value, got)
		}
		err := s.Err()
		if err == nil || !strings.Contains(err.Error(), "PAYMENTS_URL "+tc.want) {
			t.Errorf("%q: %v, want %q", tc.value, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), secretLike) {
			t.Errorf("%q: the error quotes the value: %v", tc.value, err)
		}
	}
	// A good URL, and any string, pass as they are.
	doc := `{"key":"` + secretLike + `"}`
	s := hookledger.SettingsMap(map[string]string{"U": "https://user:pw@pay.example.com/v1", "DOC": doc})
	if u, d := s.URL("U"), s.String("DOC"); u != "https://user:pw@pay.example.com/v1" || d != doc || s.Err() != nil {
		t.Fatalf("URL %q, String %q, Err %v", u, d, s.Err())
	}
}
