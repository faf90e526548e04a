package webhook_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hookledger/hookledger/webhook"
)

func TestProviderPositions(t *testing.T) {
	t.Parallel()
	sec := func(s int64) int64 { return s * int64(time.Second) }
	at := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixNano()
	}
	for _, tc := range []struct {
		name string
		read func([]byte) (webhook.Position, error)
		body string
		want webhook.Position
		err  error
	}{
		{"stripe snapshot event", webhook.StripePosition,
			`{"id":"evt_1","object":"event","created":1700000000,"type":"customer.subscription.updated","data":{"object":{"id":"sub_1","object":"subscription"}}}`,
			webhook.Position{Resource: "sub_1", At: sec(1700000000)}, nil},
		{"stripe thin event", webhook.StripePosition,
			`{"id":"evt_2","object":"v2.core.event","created":"2024-09-17T06:20:52.246Z","related_object":{"id":"mtr_1","type":"billing.meter"}}`,
			webhook.Position{Resource: "mtr_1", At: at("2024-09-17T06:20:52.246Z")}, nil},
		{"stripe event about no object", webhook.StripePosition, `{"id":"evt_3","created":1,"data":{"object":{"object":"balance"}}}`, webhook.Position{}, webhook.ErrNoPosition},
		{"stripe without created", webhook.StripePosition, `{"id":"evt_4","data":{"object":{"id":"sub_1"}}}`, webhook.Position{}, webhook.ErrNoPosition},
		{"stripe created with a fraction", webhook.StripePosition, `{"created":1.5,"data":{"object":{"id":"sub_1"}}}`, webhook.Position{}, webhook.ErrMalformedBody},
		{"stripe created out of range", webhook.StripePosition, `{"created":99999999999999,"data":{"object":{"id":"sub_1"}}}`, webhook.Position{}, webhook.ErrMalformedBody},
		{"stripe created given twice", webhook.StripePosition, `{"created":1,"created":2,"data":{"object":{"id":"sub_1"}}}`, webhook.Position{}, webhook.ErrMalformedBody},
		{"stripe object id given twice", webhook.StripePosition, `{"created":1,"data":{"object":{"id":"sub_1","id":"sub_2"}}}`, webhook.Position{}, webhook.ErrMalformedBody},
		{"stripe body not JSON", webhook.StripePosition, `created=1`, webhook.Position{}, webhook.ErrMalformedBody},
		{"shopify order", webhook.ShopifyPosition,
			`{"id":820982911946154508,"admin_graphql_api_id":"gid://shopify/Order/820982911946154508","updated_at":"2021-12-31T19:00:00-05:00"}`,
			webhook.Position{Resource: "gid://shopify/Order/820982911946154508", At: at("2022-01-01T00:00:00Z")}, nil},
		{"shopify deletion", webhook.ShopifyPosition, `{"id":788032119674292922}`, webhook.Position{}, webhook.ErrNoPosition},
		{"shopify updated_at null", webhook.ShopifyPosition, `{"admin_graphql_api_id":"gid://shopify/Product/1","updated_at":null}`, webhook.Position{}, webhook.ErrNoPosition},
		{"shopify updated_at not a time", webhook.ShopifyPosition, `{"admin_graphql_api_id":"gid://shopify/Product/1","updated_at":"yesterday"}`, webhook.Position{}, webhook.ErrMalformedBody},
		{"paddle event", webhook.PaddlePosition,
			`{"event_id":"evt_01h","event_type":"subscription.updated","occurred_at":"2023-08-21T11:57:47.390028Z","data":{"id":"sub_01h","status":"active"}}`,
			webhook.Position{Resource: "sub_01h", At: at("2023-08-21T11:57:47.390028Z")}, nil},
		{"paddle id a number", webhook.PaddlePosition, `{"occurred_at":"2023-08-21T11:57:47Z","data":{"id":7}}`, webhook.Position{}, webhook.ErrNoPosition},
	} {
		got, err := tc.read([]byte(tc.body))
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s: error %v, want %v", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// Arbitrary bodies never panic and never yield a position without a
// resource.
func FuzzProviderPositions(f *testing.F) {
	f.Add([]byte(`{"created":1700000000,"data":{"object":{"id":"sub_1"}}}`))
	f.Add([]byte(`{"created":"2024-09-17T06:20:52.246Z","related_object":{"id":"mtr_1"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, read := range []func([]byte) (webhook.Position, error){webhook.StripePosition, webhook.ShopifyPosition, webhook.PaddlePosition} {
			if p, err := read(body); err == nil && p.Resource == "" {
				t.Fatalf("position without a resource from %q", body)
			}
		}
	})
}
