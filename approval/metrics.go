package approval

import (
	"encoding/json"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
	"github.com/prometheus/client_golang/prometheus"
)

// The outcome label of the decision metrics: how a request closed.
//
// A resolved request is labelled by its response's overall verdict
// (data.overall_status), not by its status, because "resolved" alone does
// not say what was decided: every approval decision approved is "approved",
// every one rejected is "rejected", some of each is "partial" (neither:
// counting it as either would misreport the other half). A request closed
// at its deadline without a decision is "expired", one the agent withdrew
// "withdrawn". One a reviewer closed with a directive is labelled by it:
// "deferred", "change_plan", "aborted". "resolved" is only a fallback for a
// resolved request whose response says nothing was decided otherwise, which
// the core never writes.
const (
	OutcomeApproved  = "approved"
	OutcomeRejected  = "rejected"
	OutcomePartial   = "partial"
	OutcomeExpired   = "expired"
	OutcomeWithdrawn = "withdrawn"
	OutcomeResolved  = "resolved"
	// The directives (Core.Direct).
	OutcomeDeferred   = "deferred"
	OutcomeChangePlan = "change_plan"
	OutcomeAborted    = "aborted"
)

// directiveOutcomes label a close by its directive.
var directiveOutcomes = map[aah.Verb]string{
	aah.VerbDefer: OutcomeDeferred, aah.VerbChangePlan: OutcomeChangePlan, aah.VerbAbort: OutcomeAborted,
}

// decisionBuckets span how long people take to decide, in seconds: a
// minute to a week.
var decisionBuckets = []float64{
	60, 5 * 60, 15 * 60, 30 * 60, 3600, 2 * 3600, 4 * 3600, 8 * 3600,
	86400, 2 * 86400, 3 * 86400, 7 * 86400,
}

// Metrics measure decisions: how long requests wait for their first answer
// and for their close, and how they close. The bot registers them with the
// rest of its metrics (bot.Metrics.Decisions) and passes them to the core
// (Options.Metrics).
type Metrics struct {
	firstAnswer prometheus.Histogram
	resolution  *prometheus.HistogramVec
	decisions   *prometheus.CounterVec
}

// NewMetrics registers the metrics with reg (nil: unregistered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		firstAnswer: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "approvalbot_decision_time_to_first_answer_seconds",
			Help: "Time from a request's receipt to its first reviewer answer (or sign-off), observed once per request " +
				"when that answer is recorded.",
			Buckets: decisionBuckets,
		}),
		resolution: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "approvalbot_decision_time_to_resolution_seconds",
			Help:    "Time from a request's receipt to its close, by outcome: approved, rejected, partial, expired, withdrawn, deferred, change_plan, aborted.",
			Buckets: decisionBuckets,
		}, []string{"outcome"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "approvalbot_decisions_total",
			Help: "Requests closed, by outcome: approved, rejected, partial (some approval decisions approved, some " +
				"rejected), expired (deadline, nothing decided), withdrawn (by the agent), deferred, change_plan, aborted (a reviewer's directive).",
		}, []string{"outcome"}),
	}
	// Every outcome is exported from the start, so a rate over it is
	// defined before the first request closes that way.
	for _, o := range []string{OutcomeApproved, OutcomeRejected, OutcomePartial, OutcomeExpired, OutcomeWithdrawn,
		OutcomeDeferred, OutcomeChangePlan, OutcomeAborted} {
		m.decisions.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.firstAnswer, m.resolution, m.decisions)
	}
	return m
}

// transition is what one committed change did that the metrics count:
// recorded the request's first reviewer answer, and/or closed it.
type transition struct {
	firstAnswer time.Duration // since receipt; valid when answered
	answered    bool
	outcome     string // how it closed; "" when it did not
	closedAfter time.Duration
}

// observe records t. The core calls it once per committed change, in the
// process whose transaction committed it (see Core.update): that is what
// makes each transition count once across replicas, retries and double
// clicks.
func (m *Metrics) observe(t transition) {
	if m == nil {
		return
	}
	if t.answered {
		m.firstAnswer.Observe(t.firstAnswer.Seconds())
	}
	if t.outcome != "" {
		m.resolution.WithLabelValues(t.outcome).Observe(t.closedAfter.Seconds())
		m.decisions.WithLabelValues(t.outcome).Inc()
	}
}

// transitionOf is what ch does to rec, as the metrics see it.
func transitionOf(rec store.Record, ch *store.Change) transition {
	var t transition
	if _, had := firstReviewerAnswer(rec.Answers); !had {
		answers := make(map[string]aah.Answer, len(ch.Answers))
		for _, a := range ch.Answers {
			answers[a.DecisionID] = a
		}
		if at, ok := firstReviewerAnswer(answers); ok {
			t.answered, t.firstAnswer = true, since(rec.ReceivedAt, at)
		}
	}
	if !rec.Status.Open() {
		return t
	}
	switch {
	case ch.Status == aah.StatusWithdrawn:
		t.outcome, t.closedAfter = OutcomeWithdrawn, since(rec.ReceivedAt, ch.WithdrawnAt)
	case ch.Status == aah.StatusExpired && ch.Resolution != nil:
		t.outcome, t.closedAfter = OutcomeExpired, since(rec.ReceivedAt, ch.Resolution.At)
	case ch.Status == aah.StatusResolved && ch.Resolution != nil && ch.Directive != nil:
		t.outcome, t.closedAfter = directiveOutcomes[ch.Directive.Verb], since(rec.ReceivedAt, ch.Resolution.At)
	case ch.Status == aah.StatusResolved && ch.Resolution != nil:
		t.outcome, t.closedAfter = verdict(ch.Resolution.Response), since(rec.ReceivedAt, ch.Resolution.At)
	}
	return t
}

// firstReviewerAnswer is the time of the earliest answer a reviewer gave
// among answers: a value they chose (or accepted preselected on submit), or
// a sign-off on a gated approval. Defaults and deadline answers are the
// system's, and a comment alone answers nothing.
func firstReviewerAnswer(answers map[string]aah.Answer) (time.Time, bool) {
	var first time.Time
	found := false
	note := func(at time.Time) {
		if !found || at.Before(first) {
			first, found = at, true
		}
	}
	for _, a := range answers {
		if a.Answered() && !a.Defaulted && !a.TimedOut {
			note(a.At)
		}
		for _, so := range a.Signoffs {
			note(so.At)
		}
	}
	return first, found
}

// verdict is the outcome label of a resolved request's response.
func verdict(response []byte) string {
	var r struct {
		Content struct {
			Body struct {
				Data struct {
					OverallStatus string `json:"overall_status"`
				} `json:"data"`
			} `json:"body"`
		} `json:"content"`
	}
	if json.Unmarshal(response, &r) != nil {
		return OutcomeResolved
	}
	switch r.Content.Body.Data.OverallStatus {
	case aah.OverallAllApproved:
		return OutcomeApproved
	case aah.OverallAllRejected:
		return OutcomeRejected
	case aah.OverallPartial:
		return OutcomePartial
	}
	return OutcomeResolved
}

// since is how long after from at is, never negative (the store's and the
// core's clocks should be one; a skew must not make a negative sample).
func since(from, at time.Time) time.Duration {
	return max(at.Sub(from), 0)
}
