// Package forward publishes events to an EventBridge bus for other services
// (Event.Forward). Each entry carries the event and the ledger's identity
// of it, with the forward step's downstream idempotency key, so consumers
// can drop the repeats an at-least-once publisher and bus make.
package forward

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/source"
)

// MaxEntryBytes is EventBridge's limit on a PutEvents entry (source, detail-type and detail).
const MaxEntryBytes = 256 * 1024

// Identity is the ledger's identity of a forwarded event, the "hookledger"
// member of every detail: a consumer deduplicates on Key (or on Source,
// Tenant and EventID together).
type Identity struct {
	Source     string    `json:"source"`
	Tenant     string    `json:"tenant"`
	EventID    string    `json:"event_id"`
	Type       string    `json:"type"`
	Key        string    `json:"key"` // the forward step's downstream idempotency key: the same on every retry
	Attempt    int       `json:"attempt"`
	ReceivedAt time.Time `json:"received_at"`
}

// Detail is a forwarded event's detail: the ledger's identity, and the event
// (its body, or what the handler chose) as JSON, or a string when not JSON.
type Detail struct {
	Hookledger Identity        `json:"hookledger"`
	Event      json.RawMessage `json:"event"`
}

// Build renders f as the entry's source, detail-type and detail.
func Build(f engine.Forwarded) (src, detailType string, detail []byte, err error) {
	event := f.Detail
	if !json.Valid(event) {
		if !utf8.Valid(event) {
			return "", "", nil, engine.PermanentError{Err: errors.New("forward: the detail is neither JSON nor text")}
		}
		event, _ = json.Marshal(string(event))
	}
	detailType = cmp.Or(f.Type, "event")
	detail, err = json.Marshal(Detail{Hookledger: Identity{Source: f.Source, Tenant: f.Tenant, EventID: f.ID, Type: f.Type, Key: f.Key,
		Attempt: f.Attempt, ReceivedAt: f.ReceivedAt.UTC()}, Event: event})
	if err != nil {
		return "", "", nil, engine.PermanentError{Err: fmt.Errorf("forward: %w", err)}
	}
	src = source.ForwardPrefix + f.Source
	if n := len(src) + len(detailType) + len(detail); n > MaxEntryBytes {
		return "", "", nil, engine.PermanentError{Err: fmt.Errorf("forward: the entry is %d bytes, over EventBridge's %d: forward the part of the event your consumers need (ev.Forward(ctx, detail))", n, MaxEntryBytes)}
	}
	return src, detailType, detail, nil
}

// API is the slice of EventBridge the publisher calls.
type API interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Publisher puts forwarded events on one bus.
type Publisher struct {
	API API
	Bus string // the bus's name or ARN (ForwardEventBus)
}

// Publish puts f on the bus and returns the EventBridge event id. An entry
// the bus refused (FailedEntryCount) is an error, retried as a failed step.
func (p *Publisher) Publish(ctx context.Context, f engine.Forwarded) (string, error) {
	src, dt, detail, err := Build(f)
	if err != nil {
		return "", err
	}
	out, err := p.API.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{{
		EventBusName: aws.String(p.Bus), Source: aws.String(src), DetailType: aws.String(dt), Detail: aws.String(string(detail)),
	}}})
	if err != nil {
		return "", fmt.Errorf("forward to %s: %w", p.Bus, err)
	}
	if out.FailedEntryCount > 0 || len(out.Entries) != 1 || aws.ToString(out.Entries[0].EventId) == "" {
		code, msg := "", ""
		if len(out.Entries) > 0 {
			code, msg = aws.ToString(out.Entries[0].ErrorCode), aws.ToString(out.Entries[0].ErrorMessage)
		}
		return "", fmt.Errorf("forward to %s: the bus refused the entry (%s: %s); retried", p.Bus, code, msg)
	}
	return aws.ToString(out.Entries[0].EventId), nil
}
