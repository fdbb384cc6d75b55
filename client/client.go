// Package client is approvalbot's Go client for agents: submit a decision
// request, wait for its decision (long poll or the event stream), withdraw
// it, and verify the signed decision responses approvalbot POSTs to an
// agent (CallbackHandler). RequireApproval (gate.go) puts a human gate in
// front of one proposed tool call.
//
//	c := client.New("http://localhost:8080", "")            // local mode needs no token
//	sub, err := c.Submit(ctx, &client.Request{Title: "Deploy", Decisions: []client.Decision{
//		{ID: "go", Type: "approval", Prompt: "Deploy v2 now?", Required: true}}})
//	view, err := c.Wait(ctx, sub.ID)                         // view.Response is the decision
//
// Submissions are safe to retry: the request id (artifact.id) is fixed
// before the first attempt (generated when the caller gave none), and the
// bot answers 200 to an identical resubmission instead of storing it twice.
// So the client retries network errors, 503, a proxy's 502 or 504, and a
// 429 with Retry-After (honouring it) on every call. API refusals come back as *APIError, which
// errors.Is matches against ErrNotFound, ErrConflict, ErrRateLimited,
// ErrUnauthorized and the others.
//
// The package imports nothing of the bot but its wire types (aah) and the
// Standard Webhooks library the bot signs with.
package client

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults of the options.
const (
	DefaultAttempts     = 5
	DefaultBackoff      = 250 * time.Millisecond
	DefaultMaxBackoff   = 5 * time.Second
	DefaultMaxRetryWait = 30 * time.Second
	DefaultTimeout      = 30 * time.Second
	// DefaultPollWait is how long one long poll asks the bot to hold the
	// request (the bot allows up to 60 s).
	DefaultPollWait = 50 * time.Second
)

// maxBody bounds what is read of an answer (a request view holds the
// artifact and its response, each at most 1 MiB by default).
const maxBody = 8 << 20

// Client talks to one approvalbot. It is safe for concurrent use.
type Client struct {
	base         *url.URL
	baseErr      error
	token        string
	hc           *http.Client
	attempts     int
	backoff      time.Duration
	maxBackoff   time.Duration
	maxRetryWait time.Duration
	timeout      time.Duration
	pollWait     time.Duration
	userAgent    string
	sleep        func(ctx context.Context, d time.Duration) error
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends every call through hc (default: a client of its own
// without an overall timeout; each call is bounded by WithTimeout, a long
// poll by its wait plus that).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithRetries sets how many attempts a call makes in all (1: no retries)
// and the first backoff after a failed one (doubled each time, with
// jitter, up to 5 s). A Retry-After from the bot replaces the backoff.
func WithRetries(attempts int, backoff time.Duration) Option {
	return func(c *Client) { c.attempts, c.backoff = max(attempts, 1), backoff }
}

// WithMaxRetryWait caps how long the client waits for a Retry-After
// (default 30 s): asked to wait longer, it returns the *APIError instead,
// its RetryAfter saying how long the bot asked for.
func WithMaxRetryWait(d time.Duration) Option { return func(c *Client) { c.maxRetryWait = d } }

// WithTimeout bounds one attempt of a call (default 30 s); a long poll's
// attempt gets its wait on top.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithPollWait sets how long each long poll of Wait asks the bot to hold
// (default 50 s; the bot allows 60 s at most).
func WithPollWait(d time.Duration) Option { return func(c *Client) { c.pollWait = d } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the bot at baseURL (e.g. http://localhost:8080)
// that authenticates with token (an INTAKE_TOKENS token; "" in local
// mode). An invalid baseURL makes every call fail with the reason.
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{token: token, hc: &http.Client{}, attempts: DefaultAttempts, backoff: DefaultBackoff,
		maxBackoff: DefaultMaxBackoff, maxRetryWait: DefaultMaxRetryWait, timeout: DefaultTimeout,
		pollWait: DefaultPollWait, userAgent: "approvalbot-go-client", sleep: sleepCtx}
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	switch {
	case err != nil:
		c.baseErr = fmt.Errorf("approvalbot: base URL %q: %w", baseURL, err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		c.baseErr = fmt.Errorf("approvalbot: base URL %q must be http(s)://host[:port]", baseURL)
	}
	c.base = u
	for _, o := range opts {
		o(c)
	}
	return c
}

// call is one API call: its method, path (with query) and body, sent
// again unchanged on every attempt.
type call struct {
	method string
	path   string
	body   []byte
	header http.Header
	// extra lengthens the attempt's timeout (a long poll's wait).
	extra time.Duration
}

// result is the answer of the call's last attempt.
type result struct {
	status   int
	header   http.Header
	body     []byte
	attempts int
}

// do runs the call, retrying network errors, 503 and 429 with Retry-After
// (and a proxy's 502 or 504).
// Any other answer (2xx or not) is returned as it is; the caller turns a
// non-2xx into an *APIError with apiError.
func (c *Client) do(ctx context.Context, cl call) (result, error) {
	if c.baseErr != nil {
		return result{}, c.baseErr
	}
	var lastErr error
	for attempt := 1; ; attempt++ {
		res, err := c.attempt(ctx, cl)
		res.attempts = attempt
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		var wait time.Duration
		switch {
		case err != nil:
			lastErr = fmt.Errorf("approvalbot: %s %s: %w", cl.method, cl.path, err)
			wait = c.backoffFor(attempt)
		case res.status == http.StatusServiceUnavailable || res.status == http.StatusTooManyRequests:
			lastErr = apiError(res)
			ra, ok := retryAfter(res.header.Get("Retry-After"), time.Now())
			if !ok && res.status == http.StatusTooManyRequests {
				// Over the cap of open requests: it frees when requests
				// close, not at a time; retrying now would not help.
				return res, lastErr
			}
			if ok && ra > c.maxRetryWait {
				return res, lastErr
			}
			wait = cmp.Or(ra, c.backoffFor(attempt))
			if ok && ra == 0 {
				wait = 0
			}
		case res.status == http.StatusBadGateway || res.status == http.StatusGatewayTimeout:
			// A proxy in front of the bot lost it; the call is safe to repeat.
			lastErr = apiError(res)
			wait = c.backoffFor(attempt)
		default:
			return res, nil
		}
		if attempt >= c.attempts {
			return res, lastErr
		}
		if err := c.sleep(ctx, wait); err != nil {
			return res, err
		}
	}
}

func (c *Client) attempt(ctx context.Context, cl call) (result, error) {
	actx, cancel := context.WithTimeout(ctx, c.timeout+cl.extra)
	defer cancel()
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(actx, cl.method, c.base.String()+cl.path, body)
	if err != nil {
		return result{}, err
	}
	for k, v := range cl.header {
		req.Header[k] = v
	}
	if cl.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.hc.Do(req)
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return result{}, fmt.Errorf("read the answer: %w", err)
	}
	return result{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// backoffFor is the wait after the attempt'th failure: backoff doubling up
// to maxBackoff, with up to 50% jitter.
func (c *Client) backoffFor(attempt int) time.Duration {
	d := c.backoff
	for i := 1; i < attempt && d < c.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.maxBackoff)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(h, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(min(s, 1<<30)) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
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

// transient reports whether err is worth waiting out (Wait keeps
// waiting through it): a network error, a 5xx or a 429, as opposed to a
// refusal or the caller's context ending.
func transient(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status >= 500 || ae.Status == http.StatusTooManyRequests
	}
	return err != nil
}
