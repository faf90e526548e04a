package source

import (
	"context"
	"strings"
	"testing"
)

// secretLike stands for a secret that no error may quote.
const secretLike = "Sk9LiveSourcesLeakCanary"

// storeMap is a Secrets Manager holding string secrets by id.
type storeMap map[string]string

func (m storeMap) GetSecretValue(_ context.Context, id string) (string, error) { return m[id], nil }

// A sources document may come from a secret store and holds signing
// secrets: its errors say what is wrong and quote none of its values.
// Before, an unknown scheme and a url were quoted (a secret with a colon,
// a URL with credentials).
func TestConfigErrorsNeverQuoteAValue(t *testing.T) {
	t.Parallel()
	twilio := func(url, tenants string) string {
		return `{"tw":{"provider":"twilio","url":"` + url + `","tenants":` + tenants + `}}`
	}
	one := `{"acme":{"secrets":["literal:a"]}}`
	for _, doc := range []string{
		`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["` + secretLike + `:x"]}}}}`,
		twilio("https://u:"+secretLike+"@hooks.example.com/{x}", one),
		twilio("ftp://u:"+secretLike+"@hooks.example.com/a", one),
		twilio("https://u:"+secretLike+"@hooks.example.com/a", `{"a":{"secrets":["literal:a"]},"b":{"secrets":["literal:b"]}}`),
		`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:` + secretLike + `"],}}}}`,
		`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":"literal:` + secretLike + `"}}}}`,
	} {
		srcs, err := Parse([]byte(doc))
		if err == nil {
			_, err = NewRegistry(srcs, &Secrets{})
		}
		if err == nil || strings.Contains(err.Error(), secretLike) {
			t.Errorf("%s:\n%v, want an error that does not quote the secret", doc, err)
		}
	}
}

// A JSON key/value secret is no signing secret, and Resolve says so in a
// signing secret's words; Value returns it whole, for a user (an effect
// setting) that asked for a document. Before, Value refused it with the
// signing secret's message.
func TestJSONSecretIsRefusedOnlyAsASigningSecret(t *testing.T) {
	t.Parallel()
	doc := `{"api_key":"` + secretLike + `"}`
	s := &Secrets{SecretsManager: storeMap{"kv": doc}}
	ref := Ref{SchemeSecretsManager, "kv"}
	res := s.Resolve(t.Context(), []Ref{ref})
	if len(res.Errors) != 1 || !res.Only(ErrSecretUnusable) || !strings.Contains(res.Err().Error(), "store the signing secret as plaintext") ||
		strings.Contains(res.Err().Error(), secretLike) {
		t.Errorf("Resolve: %v %v, want one ErrSecretUnusable about signing secrets, not quoting the value", res.Values, res.Err())
	}
	if v, err := s.Value(t.Context(), ref); err != nil || v != doc {
		t.Errorf("Value: %q %v, want the document", v, err)
	}
}
