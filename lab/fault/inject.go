package fault

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Env is the environment variable a fault-injection build reads, a comma
// separated list of service.kind=share pairs and an optional seed, e.g.
//
//	dynamodb.throttle=0.05,dynamodb.500=0.03,dynamodb.timeout=0.02,
//	dynamodb.timeout_after_write=0.03,sqs.500=0.03,sqs.timeout_after_write=0.02,seed=42
//
// The service is the SDK's service id in lower case (dynamodb, sqs, ...) or
// "*" for every service; the share is the probability, per attempt, of
// that fault.
const Env = "HOOKLEDGER_FAULTS"

// The fault kinds.
const (
	// Throttle answers 400 ThrottlingException (DynamoDB) or RequestThrottled
	// (other services) without sending the request.
	Throttle = "throttle"
	// Internal answers 500 InternalServerError without sending the request.
	Internal = "500"
	// Timeout fails the attempt as a client timeout before anything is sent.
	Timeout = "timeout"
	// TimeoutAfterWrite sends the request, lets the service act on it, then
	// discards the answer and fails the attempt as a client timeout: the
	// caller cannot tell that the write happened.
	TimeoutAfterWrite = "timeout_after_write"
)

var kinds = []string{Throttle, Internal, Timeout, TimeoutAfterWrite}

// rule is one service's fault shares, in the order of kinds.
type rule [4]float64

// spec is a parsed HOOKLEDGER_FAULTS.
type spec struct {
	rules  map[string]rule // by lower-case service id, "*" for all
	seed   uint64
	seeded bool
}

// parse reads a HOOKLEDGER_FAULTS value.
func parse(s string) (spec, error) {
	sp := spec{rules: map[string]rule{}}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return spec{}, fmt.Errorf("%q: want service.kind=share or seed=N", part)
		}
		name = strings.ToLower(strings.TrimSpace(name))
		val = strings.TrimSpace(val)
		if name == "seed" {
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return spec{}, fmt.Errorf("seed=%q: want a non-negative integer", val)
			}
			sp.seed, sp.seeded = n, true
			continue
		}
		svc, kind, ok := strings.Cut(name, ".")
		idx := indexOf(kinds, kind)
		if !ok || svc == "" || idx < 0 {
			return spec{}, fmt.Errorf("%q: want service.kind with kind one of %s", name, strings.Join(kinds, ", "))
		}
		p, err := strconv.ParseFloat(val, 64)
		if err != nil || p < 0 || p > 1 {
			return spec{}, fmt.Errorf("%s=%q: want a share between 0 and 1", name, val)
		}
		r := sp.rules[svc]
		r[idx] = p
		sp.rules[svc] = r
	}
	for svc, r := range sp.rules {
		if r[0]+r[1]+r[2]+r[3] > 1 {
			return spec{}, fmt.Errorf("%s: the shares add up to more than 1", svc)
		}
	}
	return sp, nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// injector decides, per attempt, whether to inject a fault.
type injector struct {
	spec spec
	mu   sync.Mutex
	rng  *rand.Rand
	// decide is the choice per attempt ("" for none); tests replace it.
	decide func(service, operation string) string
	// report is told about every injected fault (stderr by default).
	report func(service, operation, kind string)
	// throttles alternates DynamoDB's two throttling errors.
	throttles atomic.Uint64
}

func newInjector(sp spec) *injector {
	seed := sp.seed
	if !sp.seeded {
		seed = rand.Uint64()
	}
	in := &injector{spec: sp, rng: rand.New(rand.NewPCG(seed, 0x6661756c74))}
	in.decide = in.random
	in.report = func(service, operation, kind string) {
		fmt.Fprintf(os.Stderr, "fault: injected %s.%s on %s\n", service, kind, operation)
	}
	return in
}

func (in *injector) random(service, _ string) string {
	r, ok := in.spec.rules[service]
	if !ok {
		r, ok = in.spec.rules["*"]
	}
	if !ok {
		return ""
	}
	in.mu.Lock()
	x := in.rng.Float64()
	in.mu.Unlock()
	for i, p := range r {
		if x < p {
			return kinds[i]
		}
		x -= p
	}
	return ""
}

// APIOptions returns, when HOOKLEDGER_FAULTS is set, the SDK middleware that
// injects its faults into every client built from the configuration; nil
// otherwise. An invalid value stops the process with exit status 2 and a
// message naming the problem, as a configuration error would.
func APIOptions() []func(*middleware.Stack) error {
	v := strings.TrimSpace(os.Getenv(Env))
	if v == "" {
		return nil
	}
	sp, err := parse(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fault: %s: %v\n", Env, err)
		os.Exit(2)
	}
	return []func(*middleware.Stack) error{newInjector(sp).add}
}

// add puts the injector innermost in the deserialize step: after the
// operation's deserializer and inside the retry loop, so every attempt is
// judged separately, an injected error answer is decoded by the SDK's own
// deserializer into the same error type a real one becomes, and the
// retryer classifies and backs off from it exactly as it would in AWS.
func (in *injector) add(st *middleware.Stack) error {
	return st.Deserialize.Add(middleware.DeserializeMiddlewareFunc("hookledger.fault", in.handle), middleware.After)
}

func (in *injector) handle(ctx context.Context, input middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	service := strings.ToLower(middleware.GetServiceID(ctx))
	op := middleware.GetOperationName(ctx)
	kind := in.decide(service, op)
	if kind == "" {
		return next.HandleDeserialize(ctx, input)
	}
	req, _ := input.Request.(*smithyhttp.Request)
	in.report(service, op, kind)
	switch kind {
	case Throttle:
		return errorAnswer(req, service, http.StatusBadRequest, in.throttleCode(service), "Rate of requests exceeds the allowed throughput (injected).")
	case Internal:
		return errorAnswer(req, service, http.StatusInternalServerError, internalCode(service), "Internal server error (injected).")
	case Timeout:
		return middleware.DeserializeOutput{}, middleware.Metadata{}, timeoutError(req)
	default: // TimeoutAfterWrite
		out, md, err := next.HandleDeserialize(ctx, input)
		if err != nil {
			return out, md, err
		}
		if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp.Body != nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return middleware.DeserializeOutput{}, md, timeoutError(req)
	}
}

// throttleCode alternates, for DynamoDB, between ThrottlingException (on
// demand tables) and ProvisionedThroughputExceededException (provisioned
// ones); other services get RequestThrottled.
func (in *injector) throttleCode(service string) string {
	if service != "dynamodb" {
		return "RequestThrottled"
	}
	if in.throttles.Add(1)%2 == 0 {
		return "ProvisionedThroughputExceededException"
	}
	return "ThrottlingException"
}

func internalCode(service string) string {
	if service == "dynamodb" {
		return "InternalServerError"
	}
	return "InternalError"
}

// errorAnswer is a raw HTTP error answer in the AWS JSON protocol, handed to
// the operation's deserializer as if the service had sent it.
func errorAnswer(req *smithyhttp.Request, service string, status int, code, msg string) (middleware.DeserializeOutput, middleware.Metadata, error) {
	body := fmt.Sprintf(`{"__type":%q,"message":%q}`, code, msg)
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/x-amz-json-1.0")
	hdr.Set("X-Amzn-Requestid", fmt.Sprintf("fault-%d", time.Now().UnixNano()))
	if service == "sqs" {
		fault := "Receiver"
		if status < 500 {
			fault = "Sender"
		}
		hdr.Set("X-Amzn-Query-Error", code+";"+fault)
	}
	resp := &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: hdr,
		Body: io.NopCloser(bytes.NewReader([]byte(body))), ContentLength: int64(len(body)),
	}
	if req != nil {
		resp.Request = req.Request
	}
	return middleware.DeserializeOutput{RawResponse: &smithyhttp.Response{Response: resp}}, middleware.Metadata{}, nil
}

// clientTimeout is the error net/http's client returns when its timeout
// fires.
type clientTimeout struct{}

func (clientTimeout) Error() string {
	return "net/http: request canceled (Client.Timeout exceeded while awaiting headers) (injected)"
}
func (clientTimeout) Timeout() bool   { return true }
func (clientTimeout) Temporary() bool { return true }

// timeoutError wraps a client timeout the way the SDK's HTTP handler wraps
// every transport failure.
func timeoutError(req *smithyhttp.Request) error {
	u := ""
	if req != nil && req.URL != nil {
		u = req.URL.String()
	}
	return &smithyhttp.RequestSendError{Err: &url.Error{Op: "Post", URL: u, Err: clientTimeout{}}}
}

// String renders the spec in the form parse reads, for logs and tests.
func (sp spec) String() string {
	var parts []string
	for svc, r := range sp.rules {
		for i, p := range r {
			if p > 0 {
				parts = append(parts, fmt.Sprintf("%s.%s=%g", svc, kinds[i], p))
			}
		}
	}
	sort.Strings(parts)
	if sp.seeded {
		parts = append(parts, fmt.Sprintf("seed=%d", sp.seed))
	}
	return strings.Join(parts, ",")
}
