package idempotency_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/idempotency"
)

var update = flag.Bool("update", false, "rewrite testdata/dynamodb_requests.golden from the code as it is")

// recorder passes every request to the emulator and writes down what was
// asked and what came back, for TestDynamoDBRequestsGolden.
type recorder struct {
	*dynamodb.Client
	mu    sync.Mutex
	lines []string
}

func (r *recorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := r.Client.PutItem(ctx, in, o...)
	r.add("PutItem", map[string]any{
		"Item": avMap(in.Item), "ConditionExpression": aws.ToString(in.ConditionExpression),
		"ExpressionAttributeNames": in.ExpressionAttributeNames, "ExpressionAttributeValues": avMap(in.ExpressionAttributeValues),
		"ReturnValuesOnConditionCheckFailure": string(in.ReturnValuesOnConditionCheckFailure),
	}, nil, err)
	return out, err
}

func (r *recorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := r.Client.UpdateItem(ctx, in, o...)
	r.add("UpdateItem", map[string]any{
		"Key": avMap(in.Key), "UpdateExpression": aws.ToString(in.UpdateExpression), "ConditionExpression": aws.ToString(in.ConditionExpression),
		"ExpressionAttributeNames": in.ExpressionAttributeNames, "ExpressionAttributeValues": avMap(in.ExpressionAttributeValues),
		"ReturnValues": string(in.ReturnValues), "ReturnValuesOnConditionCheckFailure": string(in.ReturnValuesOnConditionCheckFailure),
	}, nil, err)
	return out, err
}

func (r *recorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := r.Client.GetItem(ctx, in, o...)
	var item map[string]types.AttributeValue
	if out != nil {
		item = out.Item
	}
	r.add("GetItem", map[string]any{"Key": avMap(in.Key), "ConsistentRead": aws.ToBool(in.ConsistentRead)}, item, err)
	return out, err
}

// add writes one line: the request, and the stored item it returned (a
// read's answer, or the old item of a refused condition).
func (r *recorder) add(op string, in map[string]any, item map[string]types.AttributeValue, err error) {
	for k, v := range in {
		if v == nil || v == "" || v == false {
			delete(in, k)
		} else if m, ok := v.(map[string]string); ok && len(m) == 0 {
			delete(in, k)
		} else if m, ok := v.(map[string]any); ok && len(m) == 0 {
			delete(in, k)
		}
	}
	line := map[string]any{"op": op, "in": in}
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		line["answer"] = "ConditionalCheckFailed"
		item = ccf.Item
	case err != nil:
		line["answer"] = err.Error()
	default:
		line["answer"] = "ok"
	}
	if item != nil {
		line["item"] = avMap(item)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(line)
	r.mu.Lock()
	r.lines = append(r.lines, strings.TrimSuffix(b.String(), "\n"))
	r.mu.Unlock()
}

// avMap spells attribute values as DynamoDB's JSON does ({"S": ...}),
// binary values by length and digest.
func avMap(m map[string]types.AttributeValue) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			out[k] = map[string]string{"S": v.Value}
		case *types.AttributeValueMemberN:
			out[k] = map[string]string{"N": v.Value}
		case *types.AttributeValueMemberB:
			sum := sha256.Sum256(v.Value)
			out[k] = map[string]string{"B": fmt.Sprintf("%d bytes, sha256 %s", len(v.Value), hex.EncodeToString(sum[:8]))}
		default:
			out[k] = fmt.Sprintf("%T", v)
		}
	}
	return out
}

// noted is a Backend that writes down, after each call's requests, the
// record it returned: what the backend decoded from the items.
type noted struct {
	idempotency.Backend
	r *recorder
}

func (b noted) note(rec idempotency.Record, claimed bool, err error) {
	line := map[string]any{"record": rec}
	if rec.Result != nil {
		sum := sha256.Sum256(rec.Result)
		line["result"] = fmt.Sprintf("%d bytes, sha256 %s", len(rec.Result), hex.EncodeToString(sum[:8]))
	}
	if claimed {
		line["claimed"] = true
	}
	if err != nil {
		line["error"] = "other"
		for name, e := range map[string]error{"ErrLeaseLost": idempotency.ErrLeaseLost, "ErrNotFound": idempotency.ErrNotFound,
			"ErrUnavailable": idempotency.ErrUnavailable, "ErrInvalid": idempotency.ErrInvalid} {
			if errors.Is(err, e) {
				line["error"] = name
			}
		}
	}
	var w strings.Builder
	enc := json.NewEncoder(&w)
	enc.SetEscapeHTML(false)
	enc.Encode(line)
	b.r.mu.Lock()
	b.r.lines = append(b.r.lines, "=> "+strings.TrimSuffix(w.String(), "\n"))
	b.r.mu.Unlock()
}

func (b noted) Claim(ctx context.Context, key string, c idempotency.Claim) (idempotency.Record, bool, error) {
	rec, claimed, err := b.Backend.Claim(ctx, key, c)
	b.note(rec, claimed, err)
	return rec, claimed, err
}

func (b noted) Complete(ctx context.Context, key, token string, c idempotency.Completion) (idempotency.Record, error) {
	rec, err := b.Backend.Complete(ctx, key, token, c)
	b.note(rec, false, err)
	return rec, err
}

func (b noted) Get(ctx context.Context, key string) (idempotency.Record, error) {
	rec, err := b.Backend.Get(ctx, key)
	b.note(rec, false, err)
	return rec, err
}

var tokenPattern = regexp.MustCompile(`\b[0-9a-f]{32}\b`)

// TestDynamoDBRequestsGolden pins the DynamoDB backend's wire format: every
// request a claim, completion (small, compressed, unstored and too large),
// failure, take-over, refused completion, read and forget sends, every
// item the table gave back, and the record the backend decoded from it,
// against testdata/dynamodb_requests.golden.
// Tables written by earlier versions must keep working, so a change here
// is a change of the stored format: the key space (pk "idem#...", sk
// "idem"), the attribute names and encodings, and the conditions. Claim
// tokens are numbered in order of appearance; the clock is fixed.
func TestDynamoDBRequestsGolden(t *testing.T) {
	t.Parallel()
	cfg := emulatorConfig(t)
	raw := dynamodb.NewFromConfig(cfg)
	table := uniqueName("idem-golden")
	if err := idempotency.CreateTable(t.Context(), raw, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table}) })
	rec := &recorder{Client: raw}
	clock := newClock(time.Date(2040, 1, 2, 3, 4, 5, 678_000_000, time.UTC))
	s, err := idempotency.NewStore(rec, idempotency.Options{Table: table, Now: clock.Now, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	b := noted{s.Backend(), rec}
	forget := b.Backend.(interface {
		Forget(context.Context, string) error
	}).Forget
	ctx := t.Context()
	claim := func(v string, maxAttempts int) idempotency.Claim {
		now := clock.Now()
		return idempotency.Claim{LeaseUntil: now.Add(30*time.Second + 250*time.Millisecond), ExpiresAt: now.Add(time.Hour), Validation: v, MaxAttempts: maxAttempts}
	}
	done := func(data []byte, unstored string) idempotency.Completion {
		return idempotency.Completion{Data: data, Unstored: unstored, ExpiresAt: clock.Now().Add(time.Hour)}
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	note := func(s string) { rec.mu.Lock(); rec.lines = append(rec.lines, "# "+s); rec.mu.Unlock() }

	note("first call, small result, repeat, read")
	r, _, err := b.Claim(ctx, "op#small", claim("v1", 0))
	must("claim", err)
	clock.Advance(20 * time.Millisecond)
	_, err = b.Complete(ctx, "op#small", r.LeaseOwner, done([]byte(`{"order":"o-1"}`), ""))
	must("complete", err)
	_, _, err = b.Claim(ctx, "op#small", claim("v1", 0))
	must("repeat", err)
	_, err = b.Get(ctx, "op#small")
	must("get", err)

	note("failure, take-over, compressed result")
	r, _, err = b.Claim(ctx, "op#failed", claim("", 2))
	must("claim", err)
	must("fail", b.Fail(ctx, "op#failed", r.LeaseOwner, "boom: "+strings.Repeat("x", 300)))
	clock.Advance(time.Second)
	r, _, err = b.Claim(ctx, "op#failed", claim("v2", 2))
	must("take over", err)
	big := []byte(`{"items":[` + strings.Repeat(`{"sku":"abc-123","qty":1},`, 120) + `{}]}`)
	_, err = b.Complete(ctx, "op#failed", r.LeaseOwner, done(big, ""))
	must("complete compressed", err)
	_, err = b.Get(ctx, "op#failed")
	must("get compressed", err)

	note("unstored by the caller, and too large to store")
	r, _, err = b.Claim(ctx, "op#unstored", claim("", 0))
	must("claim", err)
	_, err = b.Complete(ctx, "op#unstored", r.LeaseOwner, done(nil, "result does not encode as JSON"))
	must("complete unstored", err)
	r, _, err = b.Claim(ctx, "op#huge", claim("", 0))
	must("claim", err)
	noise := make([]byte, idempotency.MaxResultBytes+10)
	rand.NewChaCha8([32]byte{1}).Read(noise)
	_, err = b.Complete(ctx, "op#huge", r.LeaseOwner, done(noise, ""))
	must("complete huge", err)
	_, err = b.Get(ctx, "op#huge")
	must("get huge", err)

	note("a completion whose claim was taken over")
	r, _, err = b.Claim(ctx, "op#lapsed", claim("", 0))
	must("claim", err)
	clock.Advance(time.Minute)
	r2, _, err := b.Claim(ctx, "op#lapsed", claim("", 0))
	must("take over", err)
	if _, err := b.Complete(ctx, "op#lapsed", r.LeaseOwner, done([]byte("late"), "")); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("late completion: %v, want ErrLeaseLost", err)
	}
	must("fail", b.Fail(ctx, "op#lapsed", r2.LeaseOwner, "boom"))

	note("forget, claim afresh, forget and read what is not there")
	must("forget", forget(ctx, "op#small"))
	_, _, err = b.Claim(ctx, "op#small", claim("v1", 0))
	must("claim after forget", err)
	if err := forget(ctx, "op#absent"); !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("forget absent: %v", err)
	}
	if _, err := b.Get(ctx, "op#absent"); !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("get absent: %v", err)
	}

	tokens := map[string]string{}
	got := tokenPattern.ReplaceAllStringFunc(strings.Join(rec.lines, "\n")+"\n", func(tok string) string {
		if _, ok := tokens[tok]; !ok {
			tokens[tok] = fmt.Sprintf("TOKEN-%d", len(tokens)+1)
		}
		return tokens[tok]
	})
	const golden = "testdata/dynamodb_requests.golden"
	if *update {
		must("write golden", os.WriteFile(golden, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(golden)
	must("read golden", err)
	if !bytes.Equal([]byte(got), want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("the DynamoDB requests changed at line %d (go test -run TestDynamoDBRequestsGolden -update rewrites the file, for a deliberate format change):\ngot  %s\nwant %s", i+1, g, w)
			}
		}
	}
}
