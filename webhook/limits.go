package webhook

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// Limits are the per-agent intake limits (issue #12), so that one runaway
// agent cannot flood reviewers or Slack: a token bucket of new requests
// (INTAKE_RATE) and a cap on the requests an agent has open at once
// (INTAKE_MAX_OPEN), each with per-agent overrides. The zero Limits limit
// nothing.
type Limits struct {
	Rate          store.Rate
	RateOverrides map[string]store.Rate
	// MaxOpen caps an agent's open requests; 0 is no cap.
	MaxOpen          int
	MaxOpenOverrides map[string]int
}

// RateFor is the bucket agent's new requests are counted in.
func (l Limits) RateFor(agent string) store.Rate {
	if r, ok := l.RateOverrides[agent]; ok {
		return r
	}
	return l.Rate
}

// MaxOpenFor is the most open requests agent may have; 0 is no cap.
func (l Limits) MaxOpenFor(agent string) int {
	if n, ok := l.MaxOpenOverrides[agent]; ok {
		return n
	}
	return l.MaxOpen
}

// CapsOpen reports whether any agent's open requests are capped: then the
// store keeps the counts up to date as requests close
// (store.Options.OpenCounts).
func (l Limits) CapsOpen() bool {
	if l.MaxOpen > 0 {
		return true
	}
	for _, n := range l.MaxOpenOverrides {
		if n > 0 {
			return true
		}
	}
	return false
}

// Bounds of a rate's count and burst: far above any sane setting, low
// enough that the bucket's integer arithmetic stays exact in Lua's doubles.
const maxRateCount = 1_000_000

var rateUnits = map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}

// ParseRate parses an INTAKE_RATE value: "off", or "<count>/<unit>" with
// unit s, m or h, optionally followed by ":<burst>" (the most requests at
// once; default count). "120/m:60" is 120 requests a minute, 60 at once.
func ParseRate(s string) (store.Rate, error) {
	s = strings.TrimSpace(s)
	if s == "off" {
		return store.Rate{}, nil
	}
	spec, burstText, hasBurst := strings.Cut(s, ":")
	countText, unit, ok := strings.Cut(spec, "/")
	per, known := rateUnits[unit]
	count, err := strconv.Atoi(countText)
	if !ok || !known || err != nil || count < 1 || count > maxRateCount {
		return store.Rate{}, fmt.Errorf("%q is not a rate: want off, or <count>/<s|m|h>[:<burst>] with a count from 1 to %d, e.g. 120/m:60", s, maxRateCount)
	}
	burst := count
	if hasBurst {
		if burst, err = strconv.Atoi(burstText); err != nil || burst < 1 || burst > maxRateCount {
			return store.Rate{}, fmt.Errorf("%q: the burst after ':' must be a number from 1 to %d", s, maxRateCount)
		}
	}
	return store.Rate{Count: count, Per: per, Burst: burst}, nil
}

// FormatRate writes a rate as ParseRate reads it, burst included.
func FormatRate(r store.Rate) string {
	if r.Off() {
		return "off"
	}
	for u, d := range rateUnits {
		if d == r.Per {
			return fmt.Sprintf("%d/%s:%d", r.Count, u, r.Burst)
		}
	}
	return fmt.Sprintf("%d/%s:%d", r.Count, r.Per, r.Burst)
}

// ParseRateOverrides parses INTAKE_RATE_OVERRIDES: comma-separated
// "<agent>:<rate>" entries, each rate as ParseRate reads it
// ("pm:600/m,batch:10/s:20,ci:off").
func ParseRateOverrides(spec string) (map[string]store.Rate, error) {
	out := map[string]store.Rate{}
	err := parseOverrides("INTAKE_RATE_OVERRIDES", spec, func(agent, value string) error {
		r, err := ParseRate(value)
		out[agent] = r
		return err
	})
	return out, err
}

// ParseMaxOpenOverrides parses INTAKE_MAX_OPEN_OVERRIDES: comma-separated
// "<agent>:<count>" entries; 0 is no cap ("pm:5000,batch:50").
func ParseMaxOpenOverrides(spec string) (map[string]int, error) {
	out := map[string]int{}
	err := parseOverrides("INTAKE_MAX_OPEN_OVERRIDES", spec, func(agent, value string) error {
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a count: want a whole number, 0 for no cap", value)
		}
		out[agent] = n
		return nil
	})
	return out, err
}

func parseOverrides(setting, spec string, parse func(agent, value string) error) error {
	seen := map[string]bool{}
	for entry := range strings.SplitSeq(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		agent, value, ok := strings.Cut(entry, ":")
		if !ok || value == "" {
			return fmt.Errorf("%s: entry %q is not <agent>:<limit>", setting, entry)
		}
		if !agentNamePattern.MatchString(agent) {
			return fmt.Errorf("%s: agent name %q must be 1-64 letters, digits, _ . -", setting, agent)
		}
		if seen[agent] {
			return fmt.Errorf("%s: agent %q is listed twice", setting, agent)
		}
		seen[agent] = true
		if err := parse(agent, value); err != nil {
			return fmt.Errorf("%s: agent %q: %w", setting, agent, err)
		}
	}
	return nil
}

// limitBody says, in a 429, which limit refused the request.
type limitBody struct {
	// Name is "rate" (INTAKE_RATE) or "open_cap" (INTAKE_MAX_OPEN).
	Name string `json:"name"`
	// Rate and RetryAfter: the agent's rate, and the seconds until it may
	// submit again (also the Retry-After header).
	Rate       string `json:"rate,omitempty"`
	RetryAfter int    `json:"retry_after_seconds,omitempty"`
	// Max and Open: the agent's cap, and how many it has open.
	Max  int   `json:"max,omitempty"`
	Open int64 `json:"open,omitempty"`
}

// withinLimits checks a new request of agent against its limits, in that
// order: the rate, then the cap on open requests, where it reserves one of
// the agent's slots (exact across replicas), both in one script
// (store.Admit). A refusal is answered 429 here and ok is false. The
// slot returned, when Allowed, goes to the create and then to settleSlot.
// A resubmission of a request the agent has stored (same artifact.id, same
// body) is let through (resubmitted is true), so Create answers it 200 as
// before: a retry must never be refused for the load its first copy made.
// It is looked up only once a limit refuses, so intake under its limits
// pays nothing for it; the caller creates it under store.StoredOnly, so
// that a request deleted since the look-up is not stored anew past the
// limits.
//
// Refusals are counted (approvalbot_intake_requests_total) and logged at
// debug, not audited: a flooding agent would flood the audit chains too.
func (a *API) withinLimits(ctx context.Context, w http.ResponseWriter, r *http.Request, agent, id, hash string) (slot store.OpenSlot, resubmitted, ok bool) {
	rate := a.opts.Limits.RateFor(agent)
	maxOpen := a.opts.Limits.MaxOpenFor(agent)
	// Both limits in one round trip: the slot is reserved only when the
	// rate let the request through.
	d, slot, err := a.opts.Store.Admit(ctx, agent, id, rate, maxOpen, a.openLease())
	if err != nil {
		a.limitFailed(w, r, "apply the intake limits", err)
		return store.OpenSlot{}, false, false
	}
	return a.judge(ctx, w, r, agent, id, hash, d, slot)
}

// judge is withinLimits once the limits have been applied (by Admit, or by
// the create itself: store.Admission): d is the rate's answer, slot the
// cap's.
func (a *API) judge(ctx context.Context, w http.ResponseWriter, r *http.Request, agent, id, hash string, d store.RateDecision, slot store.OpenSlot) (_ store.OpenSlot, resubmitted, ok bool) {
	rate := a.opts.Limits.RateFor(agent)
	maxOpen := a.opts.Limits.MaxOpenFor(agent)
	if !d.Allowed {
		if again, ok := a.resubmission(ctx, w, r, agent, id, hash); again || !ok {
			return slot, again, again
		}
		secs := int(math.Ceil(d.Wait.Seconds()))
		secs = max(secs, 1)
		a.opts.Metrics.intake("rate_limited")
		a.log.DebugContext(ctx, "intake: request refused by the rate limit", "agent", agent, "rate", FormatRate(rate), "retry_after_s", secs)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeProblem(w, r, http.StatusTooManyRequests, "rate-limited", problem{
			Error: fmt.Sprintf("rate limit exceeded: agent %s may submit %d new requests per %s, %d at once (%s); retry after %d s",
				quote(agent), rate.Count, unitName(rate.Per), rate.Burst, a.rateSetting(agent), secs),
			Limit: &limitBody{Name: "rate", Rate: FormatRate(rate), RetryAfter: secs},
		})
		return slot, false, false
	}
	if maxOpen <= 0 {
		return slot, false, true
	}
	if slot.Allowed() {
		return slot, false, true
	}
	if again, ok := a.resubmission(ctx, w, r, agent, id, hash); again || !ok {
		return store.OpenSlot{}, again, again
	}
	a.opts.Metrics.intake("too_many_open")
	a.log.DebugContext(ctx, "intake: request refused by the cap on open requests", "agent", agent, "open", slot.Open, "max", maxOpen)
	writeProblem(w, r, http.StatusTooManyRequests, "too-many-open", problem{
		Error: fmt.Sprintf("too many open requests: agent %s has %d open, and may have at most %d (%s); "+
			"submit again once some are resolved, expired or withdrawn", quote(agent), slot.Open, maxOpen, a.maxOpenSetting(agent)),
		Limit: &limitBody{Name: "open_cap", Max: maxOpen, Open: slot.Open},
	})
	return store.OpenSlot{}, false, false
}

// openLease is how long a reservation of an open-request slot outlives an
// intake that died before settling it: twice the request's Redis deadline,
// so the create (its write deadline at half of it, store.OpenSlot.CreateBy) is over
// long before, even if the processes' clocks disagree by a second or two.
func (a *API) openLease() time.Duration { return 2 * a.opts.StoreTimeout }

// settleSlot finishes the reservation of slot after the create: confirmed
// when the create stored the request; decided from the stored request
// when it did not (a resubmission, a conflict, a policy refusal), so a
// resubmission never holds two slots; left to reconcile when the outcome
// is unknown (Redis did not answer: the create may have committed). A
// failure here is logged, not answered: the count can then only be too
// high, which reconcile corrects at the cap.
func (a *API) settleSlot(ctx context.Context, slot store.OpenSlot, created bool, createErr error) {
	if !slot.Allowed() {
		return
	}
	if createErr != nil && store.Unavailable(createErr) && !errors.Is(createErr, store.ErrWriteDeadline) {
		return
	}
	if createErr == nil && created {
		// Off the answer's path: an unconfirmed reservation counts until
		// reconcile confirms it, so a confirmation lost changes nothing.
		a.opts.Store.ConfirmOpenLater(slot)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.opts.StoreTimeout)
	defer cancel()
	if err := a.opts.Store.SettleOpen(ctx, slot); err != nil {
		a.log.WarnContext(ctx, "intake: could not settle the open request slot; reconcile will", "error", err)
	}
}

// resubmission reports whether agent already stored this very request
// (again). ok is false when that could not be read; the answer is written.
func (a *API) resubmission(ctx context.Context, w http.ResponseWriter, r *http.Request, agent, id, hash string) (again, ok bool) {
	rec, err := a.opts.Store.Get(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, true
	case err != nil:
		a.limitFailed(w, r, "look up a resubmission", err)
		return false, false
	}
	return rec.Agent == agent && rec.BodyHash == hash, true
}

// limitFailed answers a store failure while checking limits: 503 when
// Redis did not answer (the create would have failed the same way), else 500.
func (a *API) limitFailed(w http.ResponseWriter, r *http.Request, op string, err error) {
	if store.Unavailable(err) {
		a.opts.Metrics.intake("unavailable")
	} else {
		a.opts.Metrics.intake("error")
	}
	a.failed(w, r, op, err)
}

func (a *API) rateSetting(agent string) string {
	if _, ok := a.opts.Limits.RateOverrides[agent]; ok {
		return "INTAKE_RATE_OVERRIDES"
	}
	return "INTAKE_RATE"
}

func (a *API) maxOpenSetting(agent string) string {
	if _, ok := a.opts.Limits.MaxOpenOverrides[agent]; ok {
		return "INTAKE_MAX_OPEN_OVERRIDES"
	}
	return "INTAKE_MAX_OPEN"
}

func unitName(per time.Duration) string {
	switch per {
	case time.Second:
		return "second"
	case time.Minute:
		return "minute"
	case time.Hour:
		return "hour"
	}
	return per.String()
}
