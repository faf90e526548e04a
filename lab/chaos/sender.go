package chaos

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// request is one delivery as a sender would make it.
type request struct {
	method string
	path   string // escaped, as it goes on the wire
	body   []byte
	// header returns the headers for an attempt at now: real providers sign
	// every attempt afresh, so a retry after minutes still verifies.
	header func(now time.Time) http.Header
}

// sender posts like a real provider: it retries on connection errors,
// timeouts and 5xx, with backoff, and stops on 2xx or 4xx. It spreads
// attempts over the dev processes the way a load balancer would, moving to
// the next one after a failure.
type sender struct {
	addrs       []string
	client      *http.Client
	next        atomic.Uint64
	requests    atomic.Int64
	answered5xx atomic.Int64 // attempts the receiver answered 5xx
	connFailed  atomic.Int64 // attempts that got no answer (process down, timeout)
}

func newSender(addrs []string, conc int) *sender {
	tr := &http.Transport{MaxIdleConnsPerHost: conc, MaxConnsPerHost: 0, IdleConnTimeout: 30 * time.Second}
	return &sender{addrs: addrs, client: &http.Client{Timeout: 15 * time.Second, Transport: tr}}
}

// answer is the outcome of one delivery.
type answer struct {
	status  int    // the final HTTP status (0: never answered)
	result  string // the receiver's X-Hookledger-Result
	retries int
}

// deliver sends r until it is answered 2xx or 4xx, or ctx ends.
func (s *sender) deliver(ctx context.Context, r request) answer {
	backoff := 50 * time.Millisecond
	var a answer
	for attempt := 0; ctx.Err() == nil; attempt++ {
		addr := s.addrs[s.next.Add(1)%uint64(len(s.addrs))]
		status, result, err := s.once(ctx, addr, r)
		s.requests.Add(1)
		if err == nil && status < 500 {
			a.status, a.result, a.retries = status, result, attempt
			return a
		}
		if err == nil {
			a.status = status
			s.answered5xx.Add(1)
		} else if ctx.Err() == nil {
			s.connFailed.Add(1)
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
	return a
}

func (s *sender) once(ctx context.Context, addr string, r request) (int, string, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, "http://"+addr+r.path, body)
	if err != nil {
		return 0, "", err
	}
	if r.header != nil {
		for k, vs := range r.header(time.Now()) {
			req.Header[k] = append(req.Header[k], vs...)
		}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Hookledger-Result"), nil
}
