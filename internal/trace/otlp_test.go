package trace_test

import (
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/hookledger/hookledger/internal/trace"
)

// collector is an OTLP/HTTP traces endpoint that keeps what it receives.
type collector struct {
	mu       sync.Mutex
	requests []*http.Request
	bodies   []map[string]any
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var doc map[string]any
	if err := json.NewDecoder(zr).Decode(&doc); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.requests, c.bodies = append(c.requests, r), append(c.bodies, doc)
	c.mu.Unlock()
	io.WriteString(w, "{}")
}

// otlpSpans digs the spans out of an OTLP/HTTP JSON request, and its
// resource's attributes.
func otlpSpans(t *testing.T, doc map[string]any) (res map[string]any, spans []map[string]any) {
	t.Helper()
	rs := doc["resourceSpans"].([]any)[0].(map[string]any)
	res = map[string]any{}
	for _, a := range rs["resource"].(map[string]any)["attributes"].([]any) {
		kv := a.(map[string]any)
		res[kv["key"].(string)] = kv["value"].(map[string]any)["stringValue"]
	}
	for _, s := range rs["scopeSpans"].([]any)[0].(map[string]any)["spans"].([]any) {
		spans = append(spans, s.(map[string]any))
	}
	return res, spans
}

// Spans leave as OTLP/HTTP JSON, gzipped: hex ids, times and integers as
// decimal strings, kinds and status codes as the protocol numbers them.
func TestExportIsOTLPJSON(t *testing.T) {
	t.Parallel()
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	tr, err := trace.New(srv.URL+"/v1/traces", aws.Config{Region: "eu-west-1"}, "hookledger-processor", nil)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := trace.Parse(lambdaHeader)
	batch := tr.Start(trace.Consumer, "process", "q", trace.Context{})
	batch.Link(msg)
	step := batch.Child(trace.Internal, "step", "charge")
	step.Str("hookledger.step", "charge")
	step.Int("hookledger.attempt", 2)
	step.Fail("downstream 503")
	step.End()
	batch.End()
	tr.Flush(t.Context())
	if len(col.bodies) != 1 {
		t.Fatalf("%d requests, want 1", len(col.bodies))
	}
	r := col.requests[0]
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("request %s %v", r.URL.Path, r.Header)
	}
	res, spans := otlpSpans(t, col.bodies[0])
	if res["service.name"] != "hookledger-processor" || res["cloud.region"] != "eu-west-1" {
		t.Errorf("resource %v", res)
	}
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	s, b := spans[0], spans[1]
	if s["name"] != "step charge" || s["kind"] != float64(trace.Internal) || s["traceId"] != hex.EncodeToString(batch.Trace[:]) ||
		s["spanId"] != hex.EncodeToString(step.ID[:]) || s["parentSpanId"] != hex.EncodeToString(batch.ID[:]) {
		t.Errorf("step span %v", s)
	}
	if st := s["status"].(map[string]any); st["code"] != float64(2) || st["message"] != "downstream 503" {
		t.Errorf("step status %v, want code 2 (error) and the reason", st)
	}
	attrs := s["attributes"].([]any)
	if a := attrs[1].(map[string]any); a["key"] != "hookledger.attempt" || a["value"].(map[string]any)["intValue"] != "2" {
		t.Errorf("an integer attribute %v: want intValue \"2\"", a)
	}
	if start, _ := s["startTimeUnixNano"].(string); len(start) < 19 || strings.Trim(start, "0123456789") != "" {
		t.Errorf("startTimeUnixNano %v, want nanoseconds as a decimal string", s["startTimeUnixNano"])
	}
	link := b["links"].([]any)[0].(map[string]any)
	if b["kind"] != float64(trace.Consumer) || link["traceId"] != hex.EncodeToString(msg.Trace[:]) || link["spanId"] != hex.EncodeToString(msg.Parent[:]) {
		t.Errorf("batch span %v: want a consumer span linked to the message's context", b)
	}
	if _, ok := b["parentSpanId"]; ok {
		t.Errorf("a root span with a parent: %v", b)
	}
}

// HOOKLEDGER_SPANS=xray posts to X-Ray's OTLP endpoint, signed with the
// function's credentials for service xray (xray:PutTraceSegments).
func TestXRayExportIsSignedForXRay(t *testing.T) {
	t.Parallel()
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	cfg := aws.Config{Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	tr, err := trace.New(trace.XRay, cfg, "hookledger-receiver", nil)
	if err != nil {
		t.Fatal(err)
	}
	tr.Start(trace.Server, "POST", "/webhooks/{source}/{tenant}", trace.Context{}).End()
	tr.Flush(t.Context())
	if len(col.requests) != 1 {
		t.Fatalf("%d requests, want 1", len(col.requests))
	}
	r := col.requests[0]
	if auth := r.Header.Get("Authorization"); r.URL.Path != "/v1/traces" || !strings.Contains(auth, "/eu-west-1/xray/aws4_request") {
		t.Errorf("request to %s, Authorization %q: want /v1/traces signed for xray in eu-west-1", r.URL.Path, auth)
	}
	if r.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("Content-Encoding %q", r.Header.Get("Content-Encoding"))
	}
}

func TestSpansSettingIsCheckedAtColdStart(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", trace.XRay, "http://localhost:4318/v1/traces", "https://collector.example/v1/traces"} {
		if err := trace.CheckSpans(ok); err != nil {
			t.Errorf("CheckSpans(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"XRay", "localhost:4318", "ftp://x/v1/traces", "http://"} {
		err := trace.CheckSpans(bad)
		if err == nil || !strings.Contains(err.Error(), "HOOKLEDGER_SPANS") {
			t.Errorf("CheckSpans(%q) = %v, want an error naming the setting", bad, err)
		}
		if tr, err := trace.New(bad, aws.Config{}, "x", nil); err == nil || tr != nil {
			t.Errorf("New(%q) = %v, %v; want an error", bad, tr, err)
		}
	}
	if tr, err := trace.New("", aws.Config{}, "x", nil); tr != nil || err != nil {
		t.Errorf("New(\"\") = %v, %v; want no tracer", tr, err)
	}
}
