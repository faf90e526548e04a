package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/idempotency"
	"github.com/hookledger/hookledger/idempotency/idempotencytest"
)

func noop(context.Context, order) (receipt, error) { return receipt{}, nil }

func TestConfigErrorsAtWrap(t *testing.T) {
	t.Parallel()
	s := idempotencytest.NewStore(t, idempotency.Options{})
	key := func(o order) (any, error) { return o.ID, nil }
	tests := []struct {
		name string
		op   string
		c    idempotency.Config[order, receipt]
		want string
	}{
		{"no key", "op", idempotency.Config[order, receipt]{}, "no key"},
		{"both keys", "op", idempotency.Config[order, receipt]{Key: key, KeyPath: "order_id"}, "not both"},
		{"both validations", "op", idempotency.Config[order, receipt]{KeyPath: "order_id", ValidatePath: "amount", Validate: key}, "not both"},
		{"bad path", "op", idempotency.Config[order, receipt]{KeyPath: "a..b"}, "KeyPath"},
		{"bad validate path", "op", idempotency.Config[order, receipt]{KeyPath: "a", ValidatePath: "[x]"}, "ValidatePath"},
		{"short expiry", "op", idempotency.Config[order, receipt]{KeyPath: "a", Expiry: time.Millisecond}, "under a second"},
		{"negative wait", "op", idempotency.Config[order, receipt]{KeyPath: "a", Wait: -1}, "negative"},
		{"empty name", "", idempotency.Config[order, receipt]{KeyPath: "a"}, "operation name"},
		{"name with #", "a#b", idempotency.Config[order, receipt]{KeyPath: "a"}, "operation name"},
	}
	for _, tt := range tests {
		_, err := idempotency.Wrap(s.Store, tt.op, noop, tt.c)
		if !errors.Is(err, idempotency.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrInvalid mentioning %q", tt.name, err, tt.want)
		}
	}
	if _, err := idempotency.Wrap[order, receipt](nil, "op", noop, idempotency.Config[order, receipt]{KeyPath: "a"}); !errors.Is(err, idempotency.ErrInvalid) {
		t.Errorf("nil store: %v", err)
	}
	if _, err := idempotency.Wrap[order, receipt](s.Store, "op", nil, idempotency.Config[order, receipt]{KeyPath: "a"}); !errors.Is(err, idempotency.ErrInvalid) {
		t.Errorf("nil function: %v", err)
	}
}

func TestStoreOptionErrors(t *testing.T) {
	t.Parallel()
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1"})
	for name, o := range map[string]idempotency.Options{
		"no table":       {},
		"short expiry":   {Table: "t", Expiry: time.Millisecond},
		"negative lease": {Table: "t", NoDeadlineLease: -time.Second},
		"negative cache": {Table: "t", CacheEntries: -1},
		"negative tries": {Table: "t", MaxAttempts: -1},
	} {
		if _, err := idempotency.NewStore(db, o); !errors.Is(err, idempotency.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := idempotency.NewStore(nil, idempotency.Options{Table: "t"}); !errors.Is(err, idempotency.ErrInvalid) {
		t.Errorf("nil client: %v", err)
	}
	if _, err := idempotency.NewStoreWith(nil, idempotency.Options{}); !errors.Is(err, idempotency.ErrInvalid) {
		t.Errorf("nil backend: %v", err)
	}
}

func TestDisabledRunsDirectly(t *testing.T) {
	t.Parallel()
	s := idempotency.NewDisabled()
	runs := 0
	f, err := idempotency.Wrap(s, "op", func(ctx context.Context, o order) (receipt, error) {
		runs++
		return receipt{Serial: int64(runs)}, nil
	}, idempotency.Config[order, receipt]{KeyPath: "order_id"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		got, info, err := f.Call(t.Context(), order{ID: "o-1"})
		if err != nil || got.Serial != int64(i) || info.Outcome != idempotency.Disabled {
			t.Fatalf("call %d: %+v %+v %v", i, got, info, err)
		}
	}
	if _, info, _ := idempotency.Do(t.Context(), s, "op", nil, func(context.Context) (int, error) { return 1, nil }); info.Outcome != idempotency.Disabled {
		t.Fatalf("Do on a disabled store: %+v", info)
	}
	var logs bytes.Buffer
	if _, err := idempotency.NewStore(nil, idempotency.Options{Disabled: true, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "never set this in a deployment") {
		t.Errorf("disabling is silent: %q", logs.String())
	}
}

func TestEnvDisabled(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{"1": true, "TRUE": true, "yes": true, "on": true, "t": true, "y": true, "0": false, "": false, "no": false, "off": false} {
		env := map[string]string{idempotency.DisabledEnv: v}
		if got := idempotency.EnvDisabled(func(k string) string { return env[k] }); got != want {
			t.Errorf("%s=%q: %v", idempotency.DisabledEnv, v, got)
		}
	}
	env := map[string]string{idempotency.PowertoolsDisabledEnv: "true"}
	if !idempotency.EnvDisabled(func(k string) string { return env[k] }) {
		t.Error("Powertools' variable is not honoured")
	}
}

// TestMetricsAndHook: one EMF line per call with the outcome's metric and
// an Operation dimension, and the OnOutcome hook with the marker.
func TestMetricsAndHook(t *testing.T) {
	t.Parallel()
	var emf bytes.Buffer
	var seen []idempotency.Outcome
	s := idempotencytest.NewStore(t, idempotency.Options{
		Metrics: &emf, MetricsNamespace: "shop", CacheEntries: 4,
		OnOutcome: func(_ context.Context, op string, info idempotency.Info, err error) {
			if op != "create-order" {
				t.Errorf("hook operation %q", op)
			}
			seen = append(seen, info.Outcome)
		},
	})
	c := counted{block: make(chan struct{}), inside: make(chan struct{}, 1)}
	f, _ := idempotency.Wrap(s.Store, "create-order", c.fn, idempotency.Config[order, receipt]{KeyPath: "order_id", ValidatePath: "amount"})
	ctx := t.Context()
	done := make(chan struct{})
	go func() { f.Call(ctx, order{ID: "o-1"}); close(done) }()
	<-c.inside
	f.Call(ctx, order{ID: "o-1"}) // in progress
	close(c.block)
	<-done
	f.Call(ctx, order{ID: "o-1"})            // hit, from the cache
	f.Call(ctx, order{ID: "o-1", Amount: 9}) // mismatch
	f.Call(ctx, order{})                     // no key
	want := []idempotency.Outcome{idempotency.InProgress, idempotency.Executed, idempotency.Replayed, idempotency.Mismatch, idempotency.Errored}
	if len(seen) != len(want) {
		t.Fatalf("hook saw %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("hook saw %v, want %v", seen, want)
		}
	}
	var metrics []string
	for _, line := range strings.Split(strings.TrimSpace(emf.String()), "\n") {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatal(err)
		}
		if doc["Operation"] != "create-order" {
			t.Errorf("line without the Operation dimension: %s", line)
		}
		aws := doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
		if aws["Namespace"] != "shop" {
			t.Errorf("namespace %v", aws["Namespace"])
		}
		var names []string
		for _, m := range aws["Metrics"].([]any) {
			names = append(names, m.(map[string]any)["Name"].(string))
		}
		metrics = append(metrics, strings.Join(names, "+"))
	}
	got := strings.Join(metrics, ",")
	if got != "IdempotencyInProgress,IdempotencyMiss,IdempotencyHit+IdempotencyCacheHit,IdempotencyMismatch,IdempotencyError" {
		t.Fatalf("metrics %s", got)
	}
}

// TestCacheIsBounded: the local cache holds at most its entries and bytes,
// least recently used out first, and never an oversized result.
func TestCacheIsBounded(t *testing.T) {
	t.Parallel()
	s := idempotencytest.NewStore(t, idempotency.Options{CacheEntries: 3, CacheBytes: 4000})
	ctx := t.Context()
	do := func(key string, size int) idempotency.Info {
		_, info, err := idempotency.Do(ctx, s.Store, "op", key, func(context.Context) (string, error) { return strings.Repeat("x", size), nil })
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	for _, k := range []string{"a", "b", "c", "d"} {
		do(k, 10)
	}
	if info := do("a", 10); info.FromCache {
		t.Error("a should have been evicted (4 entries in a cache of 3)")
	}
	if info := do("d", 10); !info.FromCache {
		t.Error("d should be cached")
	}
	do("big", 1200) // over a quarter of the bytes: never cached
	if info := do("big", 1200); info.FromCache || !info.Replayed() {
		t.Errorf("oversized result: %+v", info)
	}
}

func TestDoRejectsBadArguments(t *testing.T) {
	t.Parallel()
	s := idempotencytest.NewStore(t, idempotency.Options{})
	ctx := t.Context()
	one := func(context.Context) (int, error) { return 1, nil }
	if _, _, err := idempotency.Do(ctx, s.Store, "bad name", "k", one); !errors.Is(err, idempotency.ErrInvalid) {
		t.Errorf("bad name: %v", err)
	}
	if _, _, err := idempotency.Do[int](ctx, s.Store, "op", "k", nil); !errors.Is(err, idempotency.ErrInvalid) {
		t.Errorf("nil function: %v", err)
	}
	if _, _, err := idempotency.Do(ctx, s.Store, "op", func() {}, one); err == nil || !strings.Contains(err.Error(), "encode") {
		t.Errorf("unencodable key: %v", err)
	}
	if _, _, err := idempotency.Do(ctx, nil, "op", "k", one); !errors.Is(err, idempotency.ErrInvalid) {
		t.Errorf("nil store: %v", err)
	}
	if _, _, err := idempotency.Do(ctx, s.Store, "op", "", one); !errors.Is(err, idempotency.ErrNoKey) {
		t.Errorf("empty key: %v", err)
	}
	if n := len(s.Memory.Records()); n != 0 {
		t.Errorf("bad arguments stored %d records", n)
	}
	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	if _, _, err := idempotency.Do(expired, s.Store, "op", "k", one); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("past deadline: %v", err)
	}
}

// TestUnencodableResult: a result encoding/json refuses (NaN) is reported
// like an oversized one: the call ran once, repeats do not run it again.
func TestUnencodableResult(t *testing.T) {
	t.Parallel()
	s := idempotencytest.NewStore(t, idempotency.Options{})
	runs := 0
	nan := func(context.Context) (float64, error) { runs++; return zero / zero, nil }
	_, info, err := idempotency.Do(t.Context(), s.Store, "op", "k", nan)
	if !errors.Is(err, idempotency.ErrUnstorable) || errors.Is(err, idempotency.ErrResultTooLarge) || info.Stored || !strings.Contains(err.Error(), "encode") {
		t.Fatalf("NaN result: %+v %v", info, err)
	}
	if _, info, err = idempotency.Do(t.Context(), s.Store, "op", "k", nan); !errors.Is(err, idempotency.ErrUnstorable) || !info.Replayed() || runs != 1 {
		t.Fatalf("repeat: %+v %v (runs %d)", info, err, runs)
	}
}

var zero float64

// TestBadInputIsTyped: an input the paths or the Key function cannot read
// is ErrBadInput (a client error to answer), and nothing is stored.
func TestBadInputIsTyped(t *testing.T) {
	t.Parallel()
	s := idempotencytest.NewStore(t, idempotency.Options{})
	ctx := t.Context()
	type ev struct {
		Body string `json:"body"`
	}
	byPath, _ := idempotency.Wrap(s.Store, "op", func(context.Context, ev) (int, error) { return 1, nil }, idempotency.Config[ev, int]{KeyPath: "body.order_id"})
	if _, _, err := byPath.Call(ctx, ev{Body: "not json"}); !errors.Is(err, idempotency.ErrBadInput) {
		t.Errorf("path into plain text: %v", err)
	}
	boom := errors.New("no order id")
	byFunc, _ := idempotency.Wrap(s.Store, "op", func(context.Context, ev) (int, error) { return 1, nil },
		idempotency.Config[ev, int]{Key: func(ev) (any, error) { return nil, boom }})
	if _, _, err := byFunc.Call(ctx, ev{}); !errors.Is(err, idempotency.ErrBadInput) || !errors.Is(err, boom) {
		t.Errorf("Key function error: %v", err)
	}
	if _, _, err := idempotency.Do(ctx, s.Store, "op", func() {}, func(context.Context) (int, error) { return 1, nil }); !errors.Is(err, idempotency.ErrBadInput) {
		t.Errorf("unencodable key: %v", err)
	}
	if n := len(s.Memory.Records()); n != 0 {
		t.Errorf("bad input stored %d records", n)
	}
}

// TestInvalidUTF8IsBadInput: key or validation material that is not valid
// UTF-8 is ErrBadInput, never a key shared with another byte string
// (encoding/json would turn every invalid byte into U+FFFD).
func TestInvalidUTF8IsBadInput(t *testing.T) {
	t.Parallel()
	s := idempotencytest.NewStore(t, idempotency.Options{})
	ctx := t.Context()
	fn := func(context.Context) (string, error) { return "ran", nil }
	for _, k := range []any{string([]byte{0x9f, 0x01, 0xff}), string([]byte{0xc0, 0x01, 0xfe}), []any{"a", "\xff"}} {
		if _, info, err := idempotency.Do(ctx, s.Store, "charge", k, fn); !errors.Is(err, idempotency.ErrBadInput) || info.Outcome != idempotency.Errored {
			t.Errorf("Do with key %q: %+v %v", k, info, err)
		}
	}
	type ev struct {
		ID   string `json:"id"`
		Body string `json:"body"`
	}
	h := func(context.Context, ev) (int, error) { return 1, nil }
	byPath, _ := idempotency.Wrap(s.Store, "op", h, idempotency.Config[ev, int]{KeyPath: "id"})
	byFunc, _ := idempotency.Wrap(s.Store, "op", h, idempotency.Config[ev, int]{Key: func(e ev) (any, error) { return e.ID, nil }})
	validated, _ := idempotency.Wrap(s.Store, "op", h, idempotency.Config[ev, int]{KeyPath: "id", ValidatePath: "body"})
	inBody, _ := idempotency.Wrap(s.Store, "op", h, idempotency.Config[ev, int]{KeyPath: "body.id"})
	for name, call := range map[string]func() error{
		"path":             func() error { _, _, err := byPath.Call(ctx, ev{ID: "\xff"}); return err },
		"Key":              func() error { _, _, err := byFunc.Call(ctx, ev{ID: "\xfe"}); return err },
		"validation":       func() error { _, _, err := validated.Call(ctx, ev{ID: "o-1", Body: "\xff"}); return err },
		"path into a body": func() error { _, _, err := inBody.Call(ctx, ev{Body: "{\"id\":\"\xff\"}"}); return err },
	} {
		if err := call(); !errors.Is(err, idempotency.ErrBadInput) {
			t.Errorf("%s: %v, want ErrBadInput", name, err)
		}
	}
	raw, _ := idempotency.Wrap(s.Store, "op", func(context.Context, json.RawMessage) (int, error) { return 1, nil },
		idempotency.Config[json.RawMessage, int]{KeyPath: "id, body.id"})
	for _, doc := range []string{"{\"id\":\"\xff\"}", `{"id":"\ud800"}`, `{"body":"{\"id\":\"\\udc00\"}"}`, "{\"body\":\"{}\xff\"}"} {
		if _, _, err := raw.Call(ctx, json.RawMessage(doc)); !errors.Is(err, idempotency.ErrBadInput) {
			t.Errorf("raw %s: %v, want ErrBadInput", doc, err)
		}
	}
	// Invalid bytes the key does not select do not matter.
	if _, info, err := raw.Call(ctx, json.RawMessage("{\"id\":\"o-1\",\"note\":\"\xff\"}")); err != nil || info.Outcome != idempotency.Executed {
		t.Errorf("invalid UTF-8 outside the key: %+v %v", info, err)
	}
	if n := len(s.Memory.Records()); n != 1 {
		t.Errorf("bad input stored %d records", n-1)
	}
}
