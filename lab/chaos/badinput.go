package chaos

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hookledger/hookledger/webhook"
)

// signers holds the phase's verifiers (used to sign) and tenants' secrets.
type signers struct {
	stripe, github       *webhook.Verifier
	acme, globex, ghAcme string
}

// stripeHeader signs body for Stripe with secret at each attempt's time
// plus skew.
func (s signers) stripeHeader(body []byte, secret string, skew time.Duration) func(time.Time) http.Header {
	return func(now time.Time) http.Header {
		h, err := s.stripe.Sign(webhook.Message{Body: body, Now: now.Add(skew)}, secret)
		if err != nil {
			panic(err) // a harness bug: the secret is never empty
		}
		return h
	}
}

func (s signers) githubHeader(id string, body []byte, secret string) func(time.Time) http.Header {
	return func(time.Time) http.Header {
		h, err := s.github.Sign(webhook.Message{ID: id, Type: "push", Body: body}, secret)
		if err != nil {
			panic(err)
		}
		return h
	}
}

func fixed(kv ...string) func(time.Time) http.Header {
	return func(time.Time) http.Header {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
}

func with(base func(time.Time) http.Header, kv ...string) func(time.Time) http.Header {
	return func(now time.Time) http.Header {
		h := base(now)
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
}

// badCase is an invalid request and the answer it must get. Every one
// carries an event id that must never reach the ledger or the queue.
type badCase struct {
	name  string
	want  int
	once  bool // expensive: sent once per phase, not sprinkled
	build func(s signers, id string) request
}

func invoiceBody(id string, amount int) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","type":"invoice.paid","created":%d,"data":{"object":{"object":"invoice","amount_paid":%d,"currency":"usd","customer":"cus_chaos"}}}`,
		id, time.Now().Unix(), amount)
}

const stripePath = "/webhooks/stripe/acme"

// signedAt posts body to path signed with acme's Stripe secret.
func signedAt(path string, body []byte) func(signers, string) request {
	return func(s signers, _ string) request {
		return request{method: http.MethodPost, path: path, body: body, header: s.stripeHeader(body, s.acme, 0)}
	}
}

// badCases is the catalogue of invalid requests.
var badCases = []badCase{
	{name: "unsigned", want: 401, build: func(s signers, id string) request {
		return request{method: http.MethodPost, path: stripePath, body: invoiceBody(id, 100), header: fixed("Content-Type", "application/json")}
	}},
	{name: "wrong secret", want: 401, build: func(s signers, id string) request {
		b := invoiceBody(id, 100)
		return request{method: http.MethodPost, path: stripePath, body: b, header: s.stripeHeader(b, "whsec_not_the_tenants_secret", 0)}
	}},
	{name: "another tenant's valid signature", want: 401, build: func(s signers, id string) request {
		b := invoiceBody(id, 100) // signed with acme's secret, posted to globex
		return request{method: http.MethodPost, path: "/webhooks/stripe/globex", body: b, header: s.stripeHeader(b, s.acme, 0)}
	}},
	{name: "timestamp an hour old", want: 401, build: func(s signers, id string) request {
		b := invoiceBody(id, 100)
		return request{method: http.MethodPost, path: stripePath, body: b, header: s.stripeHeader(b, s.acme, -time.Hour)}
	}},
	{name: "timestamp an hour ahead", want: 401, build: func(s signers, id string) request {
		b := invoiceBody(id, 100)
		return request{method: http.MethodPost, path: stripePath, body: b, header: s.stripeHeader(b, s.acme, time.Hour)}
	}},
	{name: "body changed after signing", want: 401, build: func(s signers, id string) request {
		b := invoiceBody(id, 100)
		h := s.stripeHeader(b, s.acme, 0)
		return request{method: http.MethodPost, path: stripePath, body: invoiceBody(id, 999999), header: h}
	}},
	// A header the verifier reads once, sent twice: refused as ambiguous
	// before any signature is checked.
	{name: "repeated signature headers", want: 400, build: func(s signers, id string) request {
		ts := fmt.Sprint(time.Now().Unix())
		return request{method: http.MethodPost, path: stripePath, body: invoiceBody(id, 100), header: fixed(
			"Stripe-Signature", "t="+ts+",v1="+strings.Repeat("0", 64),
			"Stripe-Signature", "t="+ts+",v1="+strings.Repeat("f", 64))}
	}},
	{name: "50 KB signature header", want: 401, build: func(s signers, id string) request {
		v := "t=" + fmt.Sprint(time.Now().Unix()) + strings.Repeat(",v1="+strings.Repeat("ab", 32), 750)
		return request{method: http.MethodPost, path: stripePath, body: invoiceBody(id, 100), header: fixed("Stripe-Signature", v)}
	}},
	{name: "GitHub signature on the Stripe route", want: 401, build: func(s signers, id string) request {
		b := invoiceBody(id, 100)
		return request{method: http.MethodPost, path: stripePath, body: b, header: s.githubHeader(id, b, s.ghAcme)}
	}},
	{name: "1.1 MB header", want: 431, once: true, build: func(s signers, id string) request {
		b := invoiceBody(id, 100)
		return request{method: http.MethodPost, path: stripePath, body: b, header: with(s.stripeHeader(b, s.acme, 0), "X-Padding", strings.Repeat("x", 1100<<10))}
	}},
	{name: "unknown tenant", want: 404, build: func(s signers, id string) request {
		return signedAt("/webhooks/stripe/initech", invoiceBody(id, 100))(s, id)
	}},
	{name: "unknown source", want: 404, build: func(s signers, id string) request {
		return signedAt("/webhooks/paypal/acme", invoiceBody(id, 100))(s, id)
	}},
	{name: "'#' in tenant", want: 404, build: func(s signers, id string) request {
		return signedAt("/webhooks/stripe/ac%23me", invoiceBody(id, 100))(s, id)
	}},
	{name: "'%' in tenant", want: 404, build: func(s signers, id string) request {
		return signedAt("/webhooks/stripe/ac%25me", invoiceBody(id, 100))(s, id)
	}},
	{name: "encoded '/' in tenant", want: 404, build: func(s signers, id string) request {
		return signedAt("/webhooks/stripe/acme%2Fglobex", invoiceBody(id, 100))(s, id)
	}},
	{name: "extra path segment", want: 404, build: func(s signers, id string) request {
		return signedAt("/webhooks/stripe/acme/extra", invoiceBody(id, 100))(s, id)
	}},
	{name: "NUL in tenant", want: 404, build: func(s signers, id string) request {
		return signedAt("/webhooks/stripe/acme%00", invoiceBody(id, 100))(s, id)
	}},
	{name: "non-ASCII tenant", want: 404, build: func(s signers, id string) request {
		return signedAt("/webhooks/stripe/%C3%A4cme", invoiceBody(id, 100))(s, id)
	}},
	{name: "dot-dot source", want: 404, build: func(s signers, id string) request {
		return signedAt("/webhooks/..%2Fstripe/acme", invoiceBody(id, 100))(s, id)
	}},
	{name: "space in tenant", want: 404, build: func(s signers, id string) request {
		return signedAt("/webhooks/stripe/ac%20me", invoiceBody(id, 100))(s, id)
	}},
	{name: "100-character tenant", want: 404, build: func(s signers, id string) request {
		return signedAt("/webhooks/stripe/"+strings.Repeat("a", 100), invoiceBody(id, 100))(s, id)
	}},
	{name: "empty tenant", want: 404, build: func(s signers, id string) request {
		return signedAt("/webhooks/stripe/", invoiceBody(id, 100))(s, id)
	}},
	{name: "GET", want: 405, build: func(s signers, id string) request {
		r := signedAt(stripePath, invoiceBody(id, 100))(s, id)
		r.method, r.body = http.MethodGet, nil
		return r
	}},
	{name: "PUT", want: 405, build: func(s signers, id string) request {
		r := signedAt(stripePath, invoiceBody(id, 100))(s, id)
		r.method = http.MethodPut
		return r
	}},
	{name: "DELETE", want: 405, build: func(s signers, id string) request {
		r := signedAt(stripePath, invoiceBody(id, 100))(s, id)
		r.method = http.MethodDelete
		return r
	}},
	{name: "70 KB body (limit 64 KB)", want: 413, build: func(s signers, id string) request {
		b := fmt.Appendf(nil, `{"id":%q,"type":"invoice.paid","pad":%q,"data":{"object":{"amount_paid":100,"currency":"usd"}}}`, id, strings.Repeat("p", 70<<10))
		return signedAt(stripePath, b)(s, id)
	}},
	{name: "invalid UTF-8 in the event id", want: 400, build: func(s signers, id string) request {
		return signedAt(stripePath, invoiceBody(id+"\xff\xfe", 100))(s, id)
	}},
	{name: "malformed JSON", want: 400, build: func(s signers, id string) request {
		return signedAt(stripePath, fmt.Appendf(nil, `{"id":%q,"type":"invoice.paid","data":`, id))(s, id)
	}},
	{name: "data after the JSON value", want: 400, build: func(s signers, id string) request {
		return signedAt(stripePath, append(invoiceBody(id, 100), []byte(` {"id":"x"}`)...))(s, id)
	}},
	{name: "form body and content type", want: 400, build: func(s signers, id string) request {
		b := []byte("id=" + id + "&type=invoice.paid&amount_paid=100")
		r := signedAt(stripePath, b)(s, id)
		r.header = with(r.header, "Content-Type", "application/x-www-form-urlencoded")
		return r
	}},
	{name: "empty body", want: 400, build: func(s signers, id string) request {
		return signedAt(stripePath, []byte{})(s, id)
	}},
	{name: "no event id", want: 400, build: func(s signers, id string) request {
		return signedAt(stripePath, fmt.Appendf(nil, `{"object":"event","type":"invoice.paid","note":%q}`, id))(s, id)
	}},
	{name: "600-byte event id", want: 400, build: func(s signers, id string) request {
		return signedAt(stripePath, invoiceBody(id+strings.Repeat("k", 600), 100))(s, id)
	}},
}
