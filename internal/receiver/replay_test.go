package receiver_test

import (
	"testing"

	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/webhook"
)

func ptr[T any](v T) *T { return &v }

// GitHub signs only the body: a captured delivery sent again with a new
// X-GitHub-Delivery verifies and used to be accepted as a new event. The
// replay guard, on by default for GitHub, refuses it (409) and writes no
// record; the sender's own retry (same delivery id) is still a duplicate.
// The guard is scoped by type, so the same body under another type passes
// (a real event of another type may carry it: see the Shopify test); and
// "replay_guard": false turns it off.
func TestReplayGuardRefusesACapturedBodyUnderANewEventID(t *testing.T) {
	t.Parallel()
	f := setupWith(t, map[string]source.Source{
		"gh-off": {Config: webhook.Config{Provider: "github"}, ReplayGuard: ptr(false),
			Tenants: map[string]source.Tenant{"acme": {Secrets: []string{"literal:" + githubSecret}}}},
	}, &source.Secrets{})
	body := []byte(`{"ref":"refs/heads/main","after":"4f1c2d"}`)
	send := func(path, id, typ string) (int, string) {
		resp := f.handle(t, f.request(t, f.github, path, githubSecret, webhook.Message{ID: id, Type: typ, Body: body}))
		return resp.StatusCode, resp.Headers["X-Hookledger-Result"]
	}
	if code, res := send("/webhooks/github/acme", "d-1", "push"); code != 200 || res != "accepted" {
		t.Fatalf("first delivery: %d %s", code, res)
	}
	f.meter.Reset()
	if code, res := send("/webhooks/github/acme", "d-1", "push"); code != 200 || res != "duplicate" {
		t.Errorf("GitHub's redelivery (same id): %d %s, want 200 duplicate", code, res)
	}
	// Guard, record, and (the record is still received) the payload again.
	if n := f.meter.Service("DynamoDB"); n != 3 {
		t.Errorf("a guarded duplicate cost %d DynamoDB requests, want 3 (guard, record, payload)", n)
	}
	if code, res := send("/webhooks/github/acme", "d-forged", "push"); code != 409 || res != "rejected_replay" {
		t.Errorf("captured body under a new id: %d %s, want 409 rejected_replay", code, res)
	}
	recs, err := f.l.List(t.Context(), "", 0)
	if err != nil || len(recs) != 1 {
		t.Errorf("records after the replay: %d %v, want only the first", len(recs), err)
	}
	if code, res := send("/webhooks/github/acme", "d-other-type", "release"); code != 200 || res != "accepted" {
		t.Errorf("the same body under another type: %d %s, want accepted (the guard is scoped by type)", code, res)
	}
	// Turned off, the same replay is a new event (what the docs warn of).
	if code, res := send("/webhooks/gh-off/acme", "d-2", "push"); code != 200 || res != "accepted" {
		t.Fatalf("guard off: %d %s", code, res)
	}
	if code, res := send("/webhooks/gh-off/acme", "d-3", "push"); code != 200 || res != "accepted" {
		t.Errorf("guard off, same body, new id: %d %s, want accepted", code, res)
	}
}

// Shopify sends an order's orders/create and, right after it, an
// orders/updated whose body can be byte-identical, under two webhook ids.
// The guard kept one digest per source and tenant, so the second, a real
// event, was refused (409 rejected_replay). It is scoped by type now: both
// are accepted, and the same topic's body under a new id is still refused.
func TestReplayGuardAcceptsTwoTypesWithOneBody(t *testing.T) {
	t.Parallel()
	f := setupWith(t, map[string]source.Source{
		"shopify": {Config: webhook.Config{Provider: "shopify"},
			Tenants: map[string]source.Tenant{"acme": {Secrets: []string{"literal:shpss_acme"}}}},
	}, &source.Secrets{})
	v, err := webhook.New(webhook.Config{Provider: "shopify"})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":820982911946154508,"total_price":"49.00","updated_at":"2026-12-01T10:00:00Z"}`)
	send := func(id, topic string) string {
		resp := f.handle(t, f.request(t, v, "/webhooks/shopify/acme", "shpss_acme", webhook.Message{ID: id, Type: topic, Body: body}))
		return resp.Headers["X-Hookledger-Result"]
	}
	if res := send("e-1", "orders/create"); res != "accepted" {
		t.Fatalf("orders/create: %s", res)
	}
	if res := send("e-2", "orders/updated"); res != "accepted" {
		t.Errorf("orders/updated with the same body: %s, want accepted", res)
	}
	if res := send("e-3", "orders/updated"); res != "rejected_replay" {
		t.Errorf("orders/updated's body again under a new id: %s, want rejected_replay (the guard is on by default for Shopify)", res)
	}
	recs, err := f.l.List(t.Context(), "", 0)
	if err != nil || len(recs) != 2 {
		t.Errorf("records: %d %v, want the two real events", len(recs), err)
	}
}
