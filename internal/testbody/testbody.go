// Package testbody makes realistic webhook bodies of a chosen size for
// benchmarks: JSON shaped like a provider's event (a Stripe-style invoice
// event with line items, which also carries the fields Slack and the generic
// scheme read), deterministic for a given id, so that compression ratios and
// parse costs are those of real traffic rather than of random bytes.
package testbody

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
)

// Sizes are the payload sizes the benchmarks report: 1 KB, 10 KB, 100 KB.
var Sizes = []int{1 << 10, 10 << 10, 100 << 10}

// Label names a size the way the tables print it ("1 KB").
func Label(size int) string {
	if size%1024 == 0 {
		return fmt.Sprintf("%d KB", size/1024)
	}
	return fmt.Sprintf("%d B", size)
}

var (
	products  = []string{"Pro plan", "Team seat", "Storage add-on (100 GB)", "Priority support", "API calls overage", "Onboarding package", "Annual license", "SMS bundle"}
	currency  = []string{"usd", "eur", "gbp"}
	countries = []string{"US", "DE", "GB", "FR", "NL", "CA"}
)

// JSON returns a JSON event body of about size bytes (within a line item of
// it, never below the fixed envelope of ~600 bytes) whose event id is id.
// The top level has "id" and "type" (Stripe), "event_id", "type" and
// "event.type" (Slack's event_callback), so one body serves every scheme.
func JSON(id string, size int) []byte {
	h := fnv.New64a()
	h.Write([]byte(id))
	r := rand.New(rand.NewPCG(h.Sum64(), uint64(size)))
	created := 1_780_000_000 + r.Int64N(10_000_000)
	cust := token(r, 14)
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":%q,"object":"event","api_version":"2024-06-20","created":%d,"type":"invoice.paid","livemode":false,`, id, created)
	fmt.Fprintf(&b, `"event_id":%q,"team_id":"T%s","event":{"type":"invoice.paid","ts":"%d.000200"},`, id, strings.ToUpper(token(r, 8)), created)
	fmt.Fprintf(&b, `"request":{"id":"req_%s","idempotency_key":"%s-%s"},`, token(r, 14), token(r, 8), token(r, 4))
	fmt.Fprintf(&b, `"data":{"object":{"id":"in_%s","object":"invoice","customer":"cus_%s","customer_email":"billing+%s@example.com",`, token(r, 24), cust, token(r, 6))
	fmt.Fprintf(&b, `"customer_address":{"country":%q,"postal_code":"%05d"},"currency":%q,"status":"paid","lines":{"object":"list","data":[`,
		countries[r.IntN(len(countries))], r.IntN(99999), currency[r.IntN(len(currency))])
	total := 0
	for i := 0; ; i++ {
		amount := 100 * (1 + r.IntN(500))
		qty := 1 + r.IntN(20)
		line := fmt.Sprintf(`{"id":"il_%s","object":"line_item","amount":%d,"description":"%d × %s (at $%d.00 / month)","quantity":%d,`+
			`"period":{"start":%d,"end":%d},"price":{"id":"price_%s","product":"prod_%s","unit_amount":%d,"recurring":{"interval":"month"}},`+
			`"metadata":{"order_ref":"ORD-%06d","region":%q}}`,
			token(r, 24), amount*qty, qty, products[r.IntN(len(products))], amount/100, qty,
			created-2_592_000, created, token(r, 24), token(r, 14), amount, r.IntN(1_000_000), countries[r.IntN(len(countries))])
		if i > 0 && b.Len()+len(line)+140 > size {
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(line)
		total += amount * qty
	}
	fmt.Fprintf(&b, `],"has_more":false},"amount_paid":%d,"amount_due":%d,"attempt_count":1}}}`, total, total)
	return []byte(b.String())
}

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func token(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return string(b)
}
