package slackout

import "github.com/prometheus/client_golang/prometheus"

// Metrics count the posts and updates of request messages. The bot
// registers them with its own (bot.Metrics.Outbound).
type Metrics struct {
	posts   *prometheus.CounterVec
	updates *prometheus.CounterVec
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
	}
	if reg != nil {
		reg.MustRegister(m.posts, m.updates)
	}
	return m
}
