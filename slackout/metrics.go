package slackout

import (
	"strings"

	"github.com/approvalbot/approvalbot/store"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count the posts and updates of request messages, and the
// reminder and escalation copies sent. The bot registers them with its own
// (bot.Metrics.Outbound).
type Metrics struct {
	posts       *prometheus.CounterVec
	updates     *prometheus.CounterVec
	reminders   prometheus.Counter
	escalations prometheus.Counter
}

// NewMetrics registers the metrics with reg (nil: unregistered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		posts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "approvalbot_slack_posts_total",
			Help: "Attempts to post a request's message, by outcome: posted, paced (waited for the channel's " +
				"pacing slot), rate_limited (Slack answered 429), retry (transient failure), failed (permanent), skipped.",
		}, []string{"outcome"}),
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "approvalbot_slack_updates_total",
			Help: "Attempts to update a posted message (chat.update), by outcome.",
		}, []string{"outcome"}),
		reminders: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "approvalbot_reminders_sent_total",
			Help: "Reminders sent: one per DM to a reviewer (or reply in the request's thread), counted once however often its job ran.",
		}),
		escalations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "approvalbot_escalations_total",
			Help: "Escalated copies of requests sent: one per DM to an escalation target (or post in its channel), counted once however often its job ran.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.posts, m.updates, m.reminders, m.escalations)
	}
	return m
}

// copySent counts a reminder or escalation copy (by its effect, see
// reminderEffect) the moment it is recorded as sent: the record is
// exactly-once across attempts and processes (store.RecordCopy has one
// winner), so a retry that finds it recorded, or a losing copy deleted,
// counts nothing.
func (m *Metrics) copySent(effect string) {
	switch kind, _, _ := strings.Cut(effect, ":"); kind {
	case store.JobRemind:
		m.reminders.Inc()
	case store.JobEscalate:
		m.escalations.Inc()
	}
}
