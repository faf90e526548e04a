package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// ErrNoPosition means a body lacks the ordering fields its provider
// documents (an event about no single resource, a deletion payload).
var ErrNoPosition = errors.New("no position")

// Position is where an event stands in the history of the resource it is
// about, read from the fields its provider documents for ordering: the
// resource's id and a time, as Unix nanoseconds (higher is newer).
//
// Positions are read from the signed body only, never from headers.
// Shopify's X-Shopify-Triggered-At is not signed: a captured delivery sent
// again with a future time would make every later update look older.
// Standard Webhooks' webhook-timestamp is the attempt's time, which a retry
// renews: a retried old event would look newest.
type Position struct {
	Resource string
	At       int64
}

// StripePosition reads a Stripe event's position: the object it is about
// (data.object.id; related_object.id for a thin event) and its created time
// (seconds in a snapshot event, RFC 3339 in a thin one). Stripe delivers out
// of order and points at these two for ordering
// (https://stripe.com/docs/webhooks/best-practices#event-ordering). Two
// updates of one object within a second share a position.
func StripePosition(body []byte) (Position, error) {
	doc, err := orderDoc(body, []string{"created"}, []string{"data", "object", "id"}, []string{"related_object", "id"})
	if err != nil {
		return Position{}, err
	}
	res, _ := lookup(doc, []string{"data", "object", "id"})
	if _, ok := res.(string); !ok {
		res, _ = lookup(doc, []string{"related_object", "id"})
	}
	id, ok := res.(string)
	if !ok || id == "" {
		return Position{}, fmt.Errorf("stripe: body has no data.object.id (nor related_object.id): %w", ErrNoPosition)
	}
	created, ok := lookup(doc, []string{"created"})
	if !ok {
		return Position{}, fmt.Errorf("stripe: body has no created: %w", ErrNoPosition)
	}
	var at int64
	switch c := created.(type) {
	case json.Number:
		at, err = unixSeconds(c)
	case string:
		at, err = rfc3339(c)
	default:
		err = fmt.Errorf("is a JSON %s", jsonKind(created))
	}
	if err != nil {
		return Position{}, fmt.Errorf("stripe: created %w: %w", err, ErrMalformedBody)
	}
	return Position{Resource: id, At: at}, nil
}

// ShopifyPosition reads a Shopify resource payload's position: its global
// id (admin_graphql_api_id, which names the type, so an order and a product
// stay apart) and its updated_at (RFC 3339, seconds), when that state was
// written. Shopify does not promise order
// (https://shopify.dev/docs/apps/build/webhooks). Deletion payloads carry
// only the id: they have no position.
func ShopifyPosition(body []byte) (Position, error) {
	return timedResource(body, "shopify", []string{"admin_graphql_api_id"}, []string{"updated_at"})
}

// PaddlePosition reads a Paddle Billing event's position: the entity it is
// about (data.id) and its occurred_at (RFC 3339, microseconds), which
// Paddle says to order by, as notifications arrive out of sequence
// (https://developer.paddle.com/webhooks/about/how-webhooks-work).
func PaddlePosition(body []byte) (Position, error) {
	return timedResource(body, "paddle", []string{"data", "id"}, []string{"occurred_at"})
}

// timedResource reads a string id at idPath and an RFC 3339 time at
// timePath.
func timedResource(body []byte, provider string, idPath, timePath []string) (Position, error) {
	doc, err := orderDoc(body, idPath, timePath)
	if err != nil {
		return Position{}, err
	}
	id, _ := lookup(doc, idPath)
	s, ok := id.(string)
	if !ok || s == "" {
		return Position{}, fmt.Errorf("%s: body has no %s: %w", provider, strings.Join(idPath, "."), ErrNoPosition)
	}
	v, ok := lookup(doc, timePath)
	if !ok || v == nil {
		return Position{}, fmt.Errorf("%s: body has no %s: %w", provider, strings.Join(timePath, "."), ErrNoPosition)
	}
	ts, ok := v.(string)
	if !ok {
		return Position{}, fmt.Errorf("%s: %s is a JSON %s, want an RFC 3339 time: %w", provider, strings.Join(timePath, "."), jsonKind(v), ErrMalformedBody)
	}
	at, err := rfc3339(ts)
	if err != nil {
		return Position{}, fmt.Errorf("%s: %s %w: %w", provider, strings.Join(timePath, "."), err, ErrMalformedBody)
	}
	return Position{Resource: s, At: at}, nil
}

// orderDoc decodes a JSON body whose members on the way to paths come once
// each, so that a position never depends on which copy a reader keeps.
func orderDoc(body []byte, paths ...[]string) (any, error) {
	doc, err := decodeJSON(body)
	if err != nil {
		return nil, err
	}
	if err := uniqueAt(body, paths...); err != nil {
		return nil, err
	}
	return doc, nil
}

// Positions are Unix nanoseconds, which int64 holds from 1677 to 2262.
var (
	minPositionTime = time.Unix(0, math.MinInt64)
	maxPositionTime = time.Unix(0, math.MaxInt64)
)

func unixSeconds(n json.Number) (int64, error) {
	s, err := n.Int64()
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number of seconds", n.String())
	}
	t := time.Unix(s, 0)
	if t.Before(minPositionTime) || t.After(maxPositionTime) {
		return 0, fmt.Errorf("%d is out of range", s)
	}
	return t.UnixNano(), nil
}

func rfc3339(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an RFC 3339 time", clip(s))
	}
	if t.Before(minPositionTime) || t.After(maxPositionTime) {
		return 0, fmt.Errorf("%q is out of range", clip(s))
	}
	return t.UnixNano(), nil
}
