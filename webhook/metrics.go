package webhook

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the intake's Prometheus metrics.
type Metrics struct {
	requests  *prometheus.CounterVec
	decisions *prometheus.CounterVec
}

// NewMetrics registers the intake metrics with reg (nil: not registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "approvalbot_intake_requests_total",
			Help: "Decision requests received on POST /v1/requests, by outcome: accepted, duplicate, " +
				"invalid, refused (by the authorization policy), rate_limited (INTAKE_RATE), too_many_open (INTAKE_MAX_OPEN), " +
				"conflict, unauthorized, unavailable, too_large, unsupported_media_type, bad_body, error.",
		}, []string{"outcome"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "approvalbot_api_decisions_total",
			Help: "Calls of the decision API (POST /v1/requests/{id}/answers, comments, submit, reject and the verbs), by action and " +
				"result: recorded, unchanged (repeated the current state), refused (by the Core: audited), " +
				"unauthorized (401, or 403 for an agent without a grant), invalid (a bad body), not_found, unavailable, error.",
		}, []string{"action", "result"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.decisions)
	}
	return m
}

func (m *Metrics) intake(outcome string) { m.requests.WithLabelValues(outcome).Inc() }

func (m *Metrics) decision(action, result string) { m.decisions.WithLabelValues(action, result).Inc() }

// deliveryMetrics are the callback deliverer's Prometheus metrics.
type deliveryMetrics struct {
	deliveries *prometheus.CounterVec
	duration   prometheus.Histogram
}

// newDeliveryMetrics registers the deliverer's metrics with reg (nil: not
// registered). A second deliverer on the same registry shares the first's.
func newDeliveryMetrics(reg prometheus.Registerer) (*deliveryMetrics, error) {
	m := &deliveryMetrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "approvalbot_callback_deliveries_total",
			Help: "Decision response delivery attempts to agents' response_url, by outcome: delivered, " +
				"retry (failed, another attempt scheduled), refused (the URL or its address was refused " +
				"before sending; retried), gone (410, never retried), dead (attempts exhausted).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "approvalbot_callback_delivery_duration_seconds",
			Help:    "Duration of one decision response delivery attempt, whatever its outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
	}
	for _, outcome := range []string{"delivered", "retry", "refused", "gone", "dead"} {
		m.deliveries.WithLabelValues(outcome) // export zeros, so rate() works from the start
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.deliveries, err = register(reg, m.deliveries); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	return m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("webhook: register metrics: %w", err)
	}
	return c, nil
}

func (m *deliveryMetrics) outcome(o string) { m.deliveries.WithLabelValues(o).Inc() }
