package processor_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/ledger"
)

type publisher struct {
	got []engine.Forwarded
	err error
}

func (p *publisher) Publish(_ context.Context, f engine.Forwarded) (string, error) {
	if p.err != nil {
		return "", p.err
	}
	p.got = append(p.got, f)
	return "eb-1", nil
}

// The processor hands Event.Forward its publisher: the event is forwarded
// under the forward step's key and the step is recorded done with the
// bus's event id; a refused put fails the event for a retry; without a
// forward bus the event is dead, saying which parameter to set.
func TestForwardThroughTheProcessor(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.r.Handle("stripe", "forward.me", hookledger.ForwardEvents)
	run := func(key string) {
		t.Helper()
		if _, err := f.h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{f.event(t, key, "forward.me")}}); err != nil {
			t.Fatal(err)
		}
	}

	p := &publisher{}
	f.h.Forward = p
	run("evt_fw_ok")
	rec := f.status(t, "evt_fw_ok")
	if rec.Status != ledger.Done || rec.Steps["forward"].Result != "eb-1" {
		t.Fatalf("record %+v", rec)
	}
	if len(p.got) != 1 || p.got[0].Key != engine.DownstreamKey("stripe", "acme", "evt_fw_ok", "forward") ||
		string(p.got[0].Detail) != `{"id":"evt_fw_ok"}` || p.got[0].Type != "forward.me" {
		t.Fatalf("published %+v", p.got)
	}

	p.err = errors.New("the bus refused the entry")
	run("evt_fw_refused")
	if rec := f.status(t, "evt_fw_refused"); rec.Status != ledger.Failed || !strings.Contains(rec.LastError, "refused") {
		t.Errorf("refused: %+v", rec)
	}

	f.h.Forward = nil
	run("evt_fw_nobus")
	if rec := f.status(t, "evt_fw_nobus"); rec.Status != ledger.Dead || !strings.Contains(rec.LastError, "ForwardEventBus") {
		t.Errorf("no bus: %+v", rec)
	}
}
