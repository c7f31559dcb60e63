package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Client calls one fairsched server (or, after a not_leader answer, its
// leader). It is safe for concurrent use.
type Client struct {
	hc        *http.Client
	token     string
	userAgent string
	retries   int
	backoff   time.Duration
	maxDelay  time.Duration
	// strict refuses answers with keys the client's types do not have (the
	// package's tests use it to keep the types in step with the server).
	strict bool
	// sleep waits d or until ctx ends (a test's hook records the delays).
	sleep func(ctx context.Context, d time.Duration) error

	mu   sync.Mutex
	base *url.URL // the server (the leader once one was named)
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests with hc (default: an
// http.Client with a 30 s timeout).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithToken sends "Authorization: Bearer token" with every request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithUserAgent sets the User-Agent header (default "fairsched-client").
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithRetries sets how many times a refused or failed request is retried
// (default 3; 0 turns retries off). Following a leader is not a retry.
func WithRetries(n int) Option { return func(c *Client) { c.retries = max(n, 0) } }

// WithBackoff sets the delay before the first retry (default 100 ms) and the
// most any retry waits (default 5 s); each retry doubles the delay, with
// jitter.
func WithBackoff(first, most time.Duration) Option {
	return func(c *Client) { c.backoff, c.maxDelay = first, max(first, most) }
}

// New returns a client of the server at baseURL ("http://127.0.0.1:8080").
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := parseBase(baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{
		hc:        &http.Client{Timeout: 30 * time.Second},
		userAgent: "fairsched-client",
		retries:   3,
		backoff:   100 * time.Millisecond,
		maxDelay:  5 * time.Second,
		sleep:     sleep,
		base:      u,
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

func parseBase(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(s, "/"))
	if err != nil {
		return nil, fmt.Errorf("client: server URL %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("client: server URL %q: want http://host:port or https://host:port", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("client: server URL %q: want no query or fragment", s)
	}
	return u, nil
}

// BaseURL is the server the client sends to: the one it was made with, or
// the leader a not_leader answer named.
func (c *Client) BaseURL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.base.String()
}

// Error is an error answer of the server (status ≥ 400).
type Error struct {
	StatusCode int
	// Code is the stable error code (docs/api.md lists them).
	Code string
	// Message is one sentence for people.
	Message string
	// Path is the JSON path of the offending field, $.url.<parameter> for
	// a path parameter, the query parameter, or "$" when the whole request
	// is at fault.
	Path string
	// Leader is the leader's URL of a not_leader answer, when known.
	Leader string
	// RetryAfter is the server's Retry-After, when it sent one.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	s := fmt.Sprintf("fairsched: %d %s: %s", e.StatusCode, e.Code, e.Message)
	if e.Path != "" {
		s += " (at " + e.Path + ")"
	}
	return s
}

// ErrorCode is err's server error code ("unknown_pool", …), or "" when err
// is not a server's answer.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound
}

// request is one API call.
type request struct {
	method string
	path   string // escaped, from the server's root: "/api/v1/pools/a"
	query  url.Values
	body   any // marshalled to JSON; nil: no body
	// idempotent: sending it twice has the effect of sending it once, so it
	// is retried after a transport error too.
	idempotent bool
	// noRetry: answer at once, whatever the outcome (a probe).
	noRetry bool
}

// maxLeaderHops bounds how many not_leader answers one call follows.
const maxLeaderHops = 3

// do sends r and decodes a 2xx answer's body into out (nil: discard it). It
// retries and follows the leader as the package documentation says.
func (c *Client) do(ctx context.Context, r request, out any) error {
	var body []byte
	if r.body != nil {
		var err error
		if body, err = json.Marshal(r.body); err != nil {
			return fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
		}
	}
	hops, attempt := 0, 0
	for {
		resp, err := c.send(ctx, r, body)
		if err != nil {
			if ctx.Err() != nil || !r.idempotent || r.noRetry || attempt >= c.retries {
				return err
			}
			attempt++
			if werr := c.wait(ctx, attempt, 0); werr != nil {
				return err
			}
			continue
		}
		apiErr := c.readAnswer(resp, out)
		if apiErr == nil {
			return nil
		}
		var e *Error
		if !errors.As(apiErr, &e) {
			return apiErr
		}
		switch {
		case e.Code == "not_leader" && e.Leader != "" && hops < maxLeaderHops:
			u, perr := parseBase(e.Leader)
			if perr != nil {
				return apiErr
			}
			hops++
			c.mu.Lock()
			c.base = u
			c.mu.Unlock()
			continue
		case (e.StatusCode == http.StatusTooManyRequests || e.StatusCode == http.StatusServiceUnavailable) &&
			attempt < c.retries && !r.noRetry:
			// The server refused the request without applying it.
			attempt++
			if werr := c.wait(ctx, attempt, e.RetryAfter); werr != nil {
				return apiErr
			}
			continue
		}
		return apiErr
	}
}

func (c *Client) send(ctx context.Context, r request, body []byte) (*http.Response, error) {
	c.mu.Lock()
	u := *c.base
	c.mu.Unlock()
	plain, err := url.PathUnescape(r.path)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
	}
	u.RawPath = strings.TrimRight(u.EscapedPath(), "/") + r.path
	u.Path = strings.TrimRight(u.Path, "/") + plain
	if r.query != nil {
		u.RawQuery = r.query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
	}
	return resp, nil
}

// readAnswer decodes a 2xx answer into out, or returns the error answer as
// an *Error. It closes the body.
func (c *Client) readAnswer(resp *http.Response, out any) error {
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("client: reading the answer: %w", err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if so, ok := out.(*statusOut); ok {
			*so.status = resp.StatusCode
			out = so.out
		}
		if out == nil || resp.StatusCode == http.StatusNoContent {
			return nil
		}
		if raw, ok := out.(*[]byte); ok {
			*raw = data
			return nil
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		if c.strict {
			dec.DisallowUnknownFields()
		}
		if err := dec.Decode(out); err != nil {
			return fmt.Errorf("client: decoding the answer (status %d): %w", resp.StatusCode, err)
		}
		return nil
	}
	var body struct {
		Error struct {
			Code    string  `json:"code"`
			Message string  `json:"message"`
			Path    string  `json:"path"`
			Leader  *string `json:"leader"`
		} `json:"error"`
	}
	e := &Error{StatusCode: resp.StatusCode}
	if json.Unmarshal(data, &body) == nil && body.Error.Code != "" {
		e.Code, e.Message, e.Path = body.Error.Code, body.Error.Message, body.Error.Path
		if body.Error.Leader != nil {
			e.Leader = *body.Error.Leader
		}
	} else {
		// Not the API's error body (a proxy's page, say).
		e.Code = "http_" + strconv.Itoa(resp.StatusCode)
		e.Message = strings.TrimSpace(string(data[:min(len(data), 200)]))
	}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if secs, err := strconv.Atoi(s); err == nil && secs >= 0 {
			e.RetryAfter = time.Duration(secs) * time.Second
		}
	}
	return e
}

// wait sleeps before retry number attempt (1, 2, …): the server's
// retryAfter when it gave one, else the doubling backoff with jitter.
func (c *Client) wait(ctx context.Context, attempt int, retryAfter time.Duration) error {
	d := retryAfter
	if d <= 0 {
		d = c.backoff << min(attempt-1, 20)
		d = d/2 + rand.N(d/2+1) // jitter: [d/2, d]
	}
	return c.sleep(ctx, min(d, c.maxDelay))
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
