package receiver_test

import (
	"testing"

	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/webhook"
)

// GitHub signs only the body: a captured delivery sent again with a new
// X-GitHub-Delivery (and any X-GitHub-Event) verifies and used to be
// accepted as a new event. With replay_guard on, it is refused (409) and
// writes no record; the sender's own retry (same delivery id) is still a
// duplicate, and sources without the guard are unchanged.
func TestReplayGuardRefusesACapturedBodyUnderANewEventID(t *testing.T) {
	t.Parallel()
	f := setupWith(t, map[string]source.Source{
		"gh": {Config: webhook.Config{Provider: "github"}, ReplayGuard: true,
			Tenants: map[string]source.Tenant{"acme": {Secrets: []string{"literal:" + githubSecret}}}},
	}, &source.Secrets{})
	body := []byte(`{"ref":"refs/heads/main","after":"4f1c2d"}`)
	send := func(path, id, typ string) (int, string) {
		resp := f.handle(t, f.request(t, f.github, path, githubSecret, webhook.Message{ID: id, Type: typ, Body: body}))
		return resp.StatusCode, resp.Headers["X-Hookledger-Result"]
	}
	if code, res := send("/webhooks/gh/acme", "d-1", "push"); code != 200 || res != "accepted" {
		t.Fatalf("first delivery: %d %s", code, res)
	}
	f.meter.Reset()
	if code, res := send("/webhooks/gh/acme", "d-1", "push"); code != 200 || res != "duplicate" {
		t.Errorf("GitHub's redelivery (same id): %d %s, want 200 duplicate", code, res)
	}
	// Guard, record, and (the record is still received) the payload again.
	if n := f.meter.Service("DynamoDB"); n != 3 {
		t.Errorf("a guarded duplicate cost %d DynamoDB requests, want 3 (guard, record, payload)", n)
	}
	if code, res := send("/webhooks/gh/acme", "d-forged", "release"); code != 409 || res != "rejected_replay" {
		t.Errorf("captured body under a new id and type: %d %s, want 409 rejected_replay", code, res)
	}
	recs, err := f.l.List(t.Context(), "", 0)
	if err != nil || len(recs) != 1 {
		t.Errorf("records after the replay: %d %v, want only the first", len(recs), err)
	}
	// Without the guard the same replay is a new event (what the docs warn of).
	if code, res := send("/webhooks/github/acme", "d-2", "push"); code != 200 || res != "accepted" {
		t.Fatalf("unguarded source: %d %s", code, res)
	}
	if code, res := send("/webhooks/github/acme", "d-3", "push"); code != 200 || res != "accepted" {
		t.Errorf("unguarded source, same body, new id: %d %s (accepted: the guard is opt-in)", code, res)
	}
}
