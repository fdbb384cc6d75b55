package jobs

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the runner's Prometheus metrics: jobs run by kind and result,
// how long each took, and how late it started after its due time.
type Metrics struct {
	jobs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	lateness *prometheus.HistogramVec
}

// NewMetrics registers the runner's metrics with reg (nil: unregistered, for
// tests and for runners whose numbers nobody scrapes).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "approvalbot_jobs_total",
			Help: "Jobs run by the outbox runner, by kind and result: done, rescheduled, failed, dead.",
		}, []string{"kind", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "approvalbot_job_duration_seconds",
			Help:    "Time to run one job, by kind.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}, []string{"kind"}),
		lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "approvalbot_job_lateness_seconds",
			Help:    "How late a job started after its due time (timers: reminders, escalation, deadlines), by kind.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.jobs, m.duration, m.lateness)
	}
	return m
}
