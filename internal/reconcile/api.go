package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// apiClient calls one provider's REST API: authentication, retries of
// throttling and server errors, and errors that say what to fix.
type apiClient struct {
	provider string
	base     string // scheme://host[/prefix], no trailing slash
	http     *http.Client
	header   http.Header // sent with every request (auth, accept, version)
	retries  int         // attempts after the first for 429, 5xx and transport errors
	backoff  time.Duration
}

// APIError is a provider API's refusal.
type APIError struct {
	Provider string
	Status   int
	Message  string // the provider's own message, when it sent one
	URL      string
}

func (e *APIError) Error() string {
	hint := ""
	switch e.Status {
	case http.StatusUnauthorized:
		hint = ": the API refused the credential; check the credential reference in the reconcile configuration"
	case http.StatusForbidden:
		hint = ": the credential lacks a permission (Stripe: a restricted key needs Events read; GitHub: the token needs the Webhooks repository or organization permission)"
	case http.StatusNotFound:
		hint = ": not found; check the hook path (or API URL), and that the credential can see it"
	}
	msg := ""
	if e.Message != "" {
		msg = " (" + e.Message + ")"
	}
	return fmt.Sprintf("%s API %s answered %d%s%s", e.Provider, e.URL, e.Status, msg, hint)
}

// maxPage bounds one API answer.
const maxPage = 16 << 20

// get fetches path (absolute URL, or relative to base) and decodes the JSON
// answer into out. It returns the response headers (for Link).
func (c *apiClient) get(ctx context.Context, path string, out any) (http.Header, error) {
	return c.call(ctx, http.MethodGet, path, out)
}

func (c *apiClient) call(ctx context.Context, method, path string, out any) (http.Header, error) {
	u := path
	if !strings.HasPrefix(path, "http://") && !strings.HasPrefix(path, "https://") {
		u = c.base + path
	}
	wait := c.backoff
	if wait <= 0 {
		wait = time.Second
	}
	retries := c.retries
	if retries <= 0 {
		retries = 4
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, u, nil)
		if err != nil {
			return nil, fmt.Errorf("%s API: %w", c.provider, err)
		}
		for k, vs := range c.header {
			req.Header[k] = vs
		}
		req.Header.Set("User-Agent", "hookledger-reconcile")
		resp, err := c.http.Do(req)
		var retryAfter time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if attempt >= retries {
				return nil, fmt.Errorf("%s API %s: %w", c.provider, redactURL(u), err)
			}
		default:
			body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxPage+1))
			resp.Body.Close()
			switch {
			case rerr != nil:
				if attempt >= retries {
					return nil, fmt.Errorf("%s API %s: read answer: %w", c.provider, redactURL(u), rerr)
				}
			case resp.StatusCode >= 200 && resp.StatusCode < 300:
				if len(body) > maxPage {
					return nil, fmt.Errorf("%s API %s: answer over %d bytes", c.provider, redactURL(u), maxPage)
				}
				if out != nil && len(body) > 0 {
					if err := json.Unmarshal(body, out); err != nil {
						return nil, fmt.Errorf("%s API %s: unexpected answer: %w", c.provider, redactURL(u), err)
					}
				}
				return resp.Header, nil
			case retryable(resp) && attempt < retries:
				retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"))
			default:
				return nil, &APIError{Provider: c.provider, Status: resp.StatusCode, Message: apiMessage(body), URL: redactURL(u)}
			}
		}
		d := wait
		if retryAfter > 0 {
			d = min(retryAfter, 60*time.Second)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(d):
		}
		wait *= 2
	}
}

// retryable says whether an answer means "try later": throttling (429, or
// GitHub's 403 with Retry-After or no remaining quota) and server errors.
func retryable(resp *http.Response) bool {
	switch {
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
		return true
	case resp.StatusCode == http.StatusForbidden:
		return resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-RateLimit-Remaining") == "0"
	}
	return false
}

func parseRetryAfter(v string) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

// apiMessage picks the message out of Stripe's {"error":{"message"}} or
// GitHub's {"message"}.
func apiMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
		Error   struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	m := e.Error.Message
	if m == "" {
		m = e.Message
	}
	if len(m) > 300 {
		m = m[:300] + "..."
	}
	return m
}

// redactURL drops the query string (it may carry cursors, never secrets,
// but keeps logs short).
func redactURL(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}
