package hookledger

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
)

// HTTPError is a downstream API's answer other than 2xx, as ResponseError
// reads it.
type HTTPError struct {
	Method     string // the request's method, e.g. "POST"
	Path       string // the request's URL path: no host, no query (a query may carry keys)
	StatusCode int
	Body       string // the start of the answer's body (at most 512 bytes), for the log
}

// Error says which request got which answer.
func (e *HTTPError) Error() string {
	return fmt.Sprintf("%s %s answered %d: %s", e.Method, e.Path, e.StatusCode, e.Body)
}

// maxErrorBody is how much of an error answer's body an HTTPError keeps.
const maxErrorBody = 512

// ResponseError says what a downstream API's answer means for the event,
// by its status code:
//
//   - 2xx: nil. The body is left for the caller to read.
//   - 408, 409, 425, 429 and 5xx: an *HTTPError; the event is retried
//     later. (Stripe answers 409 while a request with the same idempotency
//     key is in flight.)
//   - any other status: Permanent(*HTTPError); the event goes dead, alarmed
//     and replayable.
//
// A Check decides what a 404 proves: for a GET of the exact object by the
// step's key, that the effect never happened (wrap ErrNotDone); for a
// search, nothing (return the error). ResponseError reads at most 512 bytes
// of an error answer's body and never closes it: the caller does.
func ResponseError(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	e := &HTTPError{StatusCode: resp.StatusCode}
	if req := resp.Request; req != nil {
		e.Method = req.Method
		if req.URL != nil {
			e.Path = req.URL.Path
		}
	}
	if resp.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		e.Body = string(bytes.TrimSpace(b))
	}
	switch c := resp.StatusCode; {
	case c == http.StatusRequestTimeout, c == http.StatusConflict, c == http.StatusTooEarly,
		c == http.StatusTooManyRequests, c >= 500:
		return e
	}
	return Permanent(e)
}
