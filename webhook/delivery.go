package webhook

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"code.dny.dev/ssrf"
	"github.com/approvalbot/approvalbot/store"
	"github.com/prometheus/client_golang/prometheus"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// DefaultDeliverySchedule is how long the deliverer waits after each failed
// attempt before the next one (plus 0–20% jitter, or longer if the agent's
// Retry-After asks for it):
//
//	5s, 30s, 2m, 10m, 30m, 1h, 2h, 4h, 8h, 9h
//
// 10 delays, so 11 attempts spread over ≈ 24.7 h (24h42m35s): an agent that is
// down for a whole day still gets its decision. After the last attempt fails
// the delivery is dead (dead-letter list; POST /v1/requests/{id}/redeliver
// starts it again).
var DefaultDeliverySchedule = []time.Duration{
	5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 9 * time.Hour,
}

// DefaultDeliveryTimeout bounds one delivery attempt (connect, TLS, request
// and response headers, and reading the response body).
const DefaultDeliveryTimeout = 10 * time.Second

const (
	// maxRetryAfter caps how long an agent's Retry-After may postpone the
	// next attempt.
	maxRetryAfter = 24 * time.Hour
	// maxResponseBody is how much of the agent's answer is read (and thrown
	// away, so the connection can be reused).
	maxResponseBody = 64 << 10
	// recordTimeout bounds storing an attempt's outcome once the POST is done.
	recordTimeout = 5 * time.Second
)

// DeliveryStore is the state the deliverer needs; *store.Store implements it.
type DeliveryStore interface {
	Get(ctx context.Context, id string) (store.Record, error)
	RecordDeliveryAttempt(ctx context.Context, id string, a store.DeliveryAttempt, state string) error
}

// DelivererOptions configure a Deliverer; zero values take the defaults.
type DelivererOptions struct {
	Store DeliveryStore
	// Secret signs every delivery (Standard Webhooks, "whsec_<base64>":
	// CALLBACK_SECRET). Required.
	Secret string
	// AgentSecrets sign the deliveries of the agents they name instead
	// (CALLBACK_SECRETS). The signature is an HMAC: whoever can verify it
	// can make it, so agents that share a secret can forge each other's
	// decision responses and events.
	AgentSecrets map[string]string
	// AllowPrivate (CALLBACK_ALLOW_PRIVATE, development only) permits plain
	// http and loopback/private (RFC 1918, ULA) targets. Link-local (cloud
	// metadata), multicast and unspecified addresses stay refused.
	AllowPrivate bool
	// Schedule is the wait after each failed attempt; default
	// DefaultDeliverySchedule. len(Schedule)+1 attempts are made in all.
	Schedule []time.Duration
	// Timeout bounds one attempt; default DefaultDeliveryTimeout.
	Timeout    time.Duration
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
	// Transport replaces the SSRF-safe transport (tests only; nil = the
	// SSRF-safe one). Redirects are never followed either way.
	Transport http.RoundTripper
	// Resolver resolves callback host names (tests only; nil = the system
	// resolver). The SSRF guard checks whatever address it returns.
	Resolver *net.Resolver
}

// Deliverer POSTs a resolved request's response artifact to the agent's
// handoff.response_url. It is the job handler of store.JobDeliver jobs (it
// satisfies jobs.Handler): each job is one attempt; a failed attempt is
// recorded together with the next job, atomically, so a delivery is never
// lost between attempts, and a crash mid-attempt leaves the job to be
// reclaimed when its lease runs out.
type Deliverer struct {
	st           DeliveryStore
	wh           *standardwebhooks.Webhook
	agentWH      map[string]*standardwebhooks.Webhook // by agent: AgentSecrets
	client       *http.Client
	allowPrivate bool
	guard        *ssrf.Guardian // nil with a test Transport
	resolver     *net.Resolver
	schedule     []time.Duration
	timeout      time.Duration
	log          *slog.Logger
	now          func() time.Time
	metrics      *deliveryMetrics
}

// NewDeliverer validates its options and returns the Deliverer.
func NewDeliverer(opts DelivererOptions) (*Deliverer, error) {
	if opts.Store == nil {
		return nil, errors.New("webhook: deliverer needs a Store")
	}
	if opts.Secret == "" {
		return nil, errors.New("webhook: deliverer needs a callback secret (CALLBACK_SECRET, whsec_<base64>)")
	}
	// The library accepts the secret with or without its prefix; so do we,
	// but it must be base64 and not empty.
	if _, err := decodeSecret(opts.Secret); err != nil {
		return nil, err
	}
	wh, err := standardwebhooks.NewWebhook(opts.Secret)
	if err != nil {
		return nil, errors.New("webhook: callback secret is not whsec_<base64>") // never echo the secret
	}
	agentWH := map[string]*standardwebhooks.Webhook{}
	for agent, secret := range opts.AgentSecrets {
		if _, err := decodeSecret(secret); err != nil {
			return nil, fmt.Errorf("webhook: the callback secret of agent %q: %w", agent, err)
		}
		if agentWH[agent], err = standardwebhooks.NewWebhook(secret); err != nil {
			return nil, fmt.Errorf("webhook: the callback secret of agent %q is not whsec_<base64>", agent)
		}
	}
	for i, d := range opts.Schedule {
		if d <= 0 {
			return nil, fmt.Errorf("webhook: delivery schedule entry %d is %s; every wait must be positive", i+1, d)
		}
	}
	if len(opts.Schedule) == 0 {
		opts.Schedule = DefaultDeliverySchedule
	}
	opts.Timeout = cmp.Or(opts.Timeout, DefaultDeliveryTimeout)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	metrics, err := newDeliveryMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	resolver := cmp.Or(opts.Resolver, net.DefaultResolver)
	rt := opts.Transport
	var guard *ssrf.Guardian
	if rt == nil {
		guard = newGuard(opts.AllowPrivate)
		rt = safeTransport(guard, opts.Timeout, opts.Resolver)
	}
	return &Deliverer{
		st: opts.Store, wh: wh, agentWH: agentWH, allowPrivate: opts.AllowPrivate, guard: guard, resolver: resolver,
		client: &http.Client{
			Transport: rt,
			// A redirect is an answer like any other: a 3xx fails the
			// attempt. Following it would let a public URL bounce the bot
			// to an address the dial guard never saw in the original URL.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		schedule: append([]time.Duration(nil), opts.Schedule...),
		timeout:  opts.Timeout, log: log, now: opts.Now, metrics: metrics,
	}, nil
}

func decodeSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return nil, errors.New("webhook: callback secret must be whsec_<base64 of the key>")
	}
	return key, nil
}

// Handle makes one delivery attempt of the job's request. It returns nil when
// the attempt's outcome is stored (the next attempt, if any, is then already
// scheduled) or when there is nothing to deliver; an error only when the
// store could not be read or written (the runner then retries the job).
func (d *Deliverer) Handle(ctx context.Context, job store.Job) error {
	rec, err := d.st.Get(ctx, job.RequestID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("deliver %s: %w", job.RequestID, err)
	}
	if len(rec.Response) == 0 || rec.ResponseURL == "" {
		return nil
	}
	switch rec.Delivery.State {
	case store.DeliveryPending, store.DeliveryRetrying:
	default:
		return nil // delivered, gone or dead: a stale job
	}
	n := rec.Delivery.Attempts + 1
	round := n - rec.Delivery.RoundStart // attempts in this round (a redelivery starts a new one)
	res := d.attempt(ctx, rec.Agent, rec.ResponseURL, cmp.Or(rec.Delivery.WebhookID, "msg_"+rec.ID), rec.Response)
	if res.abandoned != nil {
		// The runner is shutting down mid attempt: store nothing; the job
		// runs again (here or in another process), as the same attempt.
		return fmt.Errorf("deliver %s: attempt %d abandoned: %w", rec.ID, n, res.abandoned)
	}
	d.metrics.duration.Observe(res.duration.Seconds())
	a := store.DeliveryAttempt{N: n, At: res.at.UTC(), URL: rec.ResponseURL, Status: res.status,
		Error: res.err, DurationMs: res.duration.Milliseconds(), Gen: rec.Delivery.Gen}
	state, outcome := d.settle(res, round, &a)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := d.st.RecordDeliveryAttempt(rctx, rec.ID, a, state); err != nil {
		// The agent may have the response already; running the job again
		// re-sends it with the same webhook-id, which the agent dedupes on.
		return fmt.Errorf("deliver %s: record attempt %d: %w", rec.ID, n, err)
	}
	d.metrics.outcome(outcome)
	logAttrs := []any{"request_id", rec.ID, "attempt", n, "host", hostOf(rec.ResponseURL),
		"status", res.status, "duration", res.duration, "state", state}
	switch state {
	case store.DeliveryDelivered:
		d.log.InfoContext(ctx, "decision delivered", logAttrs...)
	case store.DeliveryRetrying:
		d.log.WarnContext(ctx, "decision delivery failed; will retry",
			append(logAttrs, "error", a.Error, "next_attempt_at", a.NextAttemptAt)...)
	default:
		d.log.ErrorContext(ctx, "decision delivery stopped", append(logAttrs, "error", a.Error)...)
	}
	return nil
}

// GaveUp is called when the runner buried a deliver job because Handle kept
// failing, which only happens when the store kept failing. The response is
// still stored: POST /v1/requests/{id}/redeliver (or the dead-letter list)
// starts the delivery again.
func (d *Deliverer) GaveUp(ctx context.Context, job store.Job, err error) {
	d.metrics.outcome("dead")
	d.log.ErrorContext(ctx, "decision delivery job dead-lettered after repeated store errors; "+
		"redeliver it once the store is healthy", "request_id", job.RequestID, "err", err)
}

// settle decides the state the round's n-th attempt leads to, completing a
// with the next attempt's time, and the metrics outcome.
func (d *Deliverer) settle(res attemptResult, n int, a *store.DeliveryAttempt) (state, outcome string) {
	switch {
	case res.status >= 200 && res.status < 300:
		return store.DeliveryDelivered, "delivered"
	case res.status == http.StatusGone:
		return store.DeliveryGone, "gone"
	case res.final:
		return store.DeliveryDead, "refused"
	case n > len(d.schedule):
		return store.DeliveryDead, "dead"
	}
	next := res.at.Add(jitter(d.schedule[n-1]))
	// Retry-After counts from when the answer arrived, not from when the
	// attempt began: a slow 429 must not shorten the wait it asked for.
	answered := res.at.Add(res.duration)
	if ra, ok := parseRetryAfter(res.retryAfter, answered); ok && answered.Add(ra).After(next) {
		next = answered.Add(ra)
	}
	next = next.UTC()
	a.NextAttemptAt = &next
	if res.refused {
		return store.DeliveryRetrying, "refused"
	}
	return store.DeliveryRetrying, "retry"
}

// attemptResult is what one POST came to.
type attemptResult struct {
	at         time.Time
	duration   time.Duration
	status     int    // 0 when no response arrived
	err        string // short; "" on success
	retryAfter string
	refused    bool  // the target was refused before anything was sent
	final      bool  // refused for good: retrying cannot help (finalRefusal)
	abandoned  error // the caller's context ended: no outcome to record
}

// attempt POSTs body to target, signed for agent as message msgID (the
// Standard Webhooks id, the same on every retry of one message).
func (d *Deliverer) attempt(ctx context.Context, agent, target, msgID string, body []byte) (res attemptResult) {
	res.at = d.now()
	start := time.Now()
	defer func() { res.duration = time.Since(start) }()
	if reason := d.finalRefusal(ctx, target); reason != "" {
		res.refused, res.final, res.err = true, true, reason
		return res
	}
	ts := time.Unix(res.at.Unix(), 0)
	wh := d.wh
	if own, ok := d.agentWH[agent]; ok {
		wh = own
	}
	sig, err := wh.Sign(msgID, ts, body)
	if err != nil {
		res.err = "sign: " + err.Error()
		return res
	}
	actx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		res.refused, res.final, res.err = true, true, "refused: invalid response_url; never permitted, not retried"
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "approvalbot")
	req.Header.Set(standardwebhooks.HeaderWebhookID, msgID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := d.client.Do(req)
	if err != nil {
		// Shutdown abandons the attempt; the job's own deadline (the runner
		// ends jobs well before their lease) is a timeout like ours.
		if errors.Is(ctx.Err(), context.Canceled) {
			res.abandoned = ctx.Err()
			return res
		}
		res.err, res.refused = describeError(err)
		return res
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBody))
	res.status = resp.StatusCode
	res.retryAfter = resp.Header.Get("Retry-After")
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		res.err = fmt.Sprintf("HTTP %d (redirects are not followed)", resp.StatusCode)
	default:
		res.err = fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	return res
}

// checkURL refuses a response_url before any DNS lookup or dial; it returns
// the reason, or "".
func (d *Deliverer) checkURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "refused: invalid response_url"
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && d.allowPrivate:
	case u.Scheme == "http":
		return "refused: scheme http is not allowed (https only; http needs CALLBACK_ALLOW_PRIVATE=true)"
	default:
		return "refused: scheme " + strconv.Quote(u.Scheme) + " is not allowed"
	}
	if u.User != nil {
		return "refused: credentials in the response_url"
	}
	return ""
}

// describeError turns a failed round trip into a short error for the attempt
// log, and says whether the dial guard refused the target.
func describeError(err error) (msg string, refused bool) {
	var r *refusedError
	if errors.As(err, &r) {
		return r.Error(), true
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return "timeout", false
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg = err.Error()
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg, false
}

// jitter spreads d by up to +20% so failed deliveries do not retry in step.
func jitter(d time.Duration) time.Duration {
	spread := int64(d) / 5
	if spread <= 0 {
		return d
	}
	// Upward only, so the schedule's total is a floor: retries always span
	// at least the 24.7 h the schedule adds up to.
	return d + time.Duration(rand.Int64N(spread+1))
}

// parseRetryAfter reads a Retry-After header, seconds or an HTTP date,
// relative to now, capped at maxRetryAfter.
func parseRetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		d = time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
	} else if at, err := http.ParseTime(h); err == nil {
		d = max(at.Sub(now), 0)
	} else {
		return 0, false
	}
	return min(d, maxRetryAfter), true
}

// hostOf is what logs show of a response_url: its host, never its path or
// query (which may carry the agent's own tokens).
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}
