package webhook

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the intake's Prometheus metrics.
type Metrics struct {
	requests *prometheus.CounterVec
}

// NewMetrics registers the intake metrics with reg (nil: not registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "approvalbot_intake_requests_total",
			Help: "Decision requests received on POST /v1/requests, by outcome: accepted, duplicate, " +
				"invalid, conflict, unauthorized, too_large, unsupported_media_type, bad_body, error.",
		}, []string{"outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests)
	}
	return m
}

func (m *Metrics) intake(outcome string) { m.requests.WithLabelValues(outcome).Inc() }
