package bot

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/slackout"
	"github.com/approvalbot/approvalbot/store"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the bot's Prometheus metrics: Slack posts, jobs, Slack API
// latency, decisions. The outbox and open-request gauges are separate
// collectors (OutboxCollector, OpenRequestsCollector).
type Metrics struct {
	// Decisions are the core's (approval.Options.Metrics): first answers
	// and closes, registered with the rest.
	Decisions *approval.Metrics
	// Jobs are the job runner's (jobs.Options.Metrics), registered with
	// the rest.
	Jobs *jobs.Metrics
	// Outbound are the Slack posts' and updates' (slackout.Options.Metrics),
	// registered with the rest.
	Outbound  *slackout.Metrics
	retention *retentionMetrics
	slackAPI  *prometheus.HistogramVec
}

// NewMetrics registers the bot's metrics with reg (nil: unregistered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Decisions: approval.NewMetrics(reg),
		Jobs:      jobs.NewMetrics(reg),
		Outbound:  slackout.NewMetrics(reg),
		retention: newRetentionMetrics(reg),
		slackAPI: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "approvalbot_slack_api_duration_seconds",
			Help:    "Slack Web API call latency, by method and HTTP status (\"error\" when no response arrived).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}, []string{"method", "status"}),
	}
	if reg != nil {
		reg.MustRegister(m.slackAPI, buildInfoGauge(ReadBuildInfo()))
	}
	return m
}

// buildInfoGauge is approvalbot_build_info{version,commit,go_version} 1, the
// usual Prometheus way to tell which build each process runs (join on it, or
// alert when processes disagree after a deploy).
func buildInfoGauge(info BuildInfo) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "approvalbot_build_info",
		Help: "Always 1; its labels say which build is running (see \"approvalbot version\").",
	}, []string{"version", "commit", "go_version"})
	g.WithLabelValues(info.Version, info.Commit, info.GoVersion).Set(1)
	return g
}

// InstrumentTransport wraps an HTTP transport so every Slack Web API call is
// timed by method.
func (m *Metrics) InstrumentTransport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		start := time.Now()
		resp, err := next.RoundTrip(req)
		status := "error"
		if err == nil {
			status = strconv.Itoa(resp.StatusCode)
		}
		method := req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]
		m.slackAPI.WithLabelValues(method, status).Observe(time.Since(start).Seconds())
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// QueueDepther reports the job queue's size; *store.Store implements it.
type QueueDepther interface {
	Depth(ctx context.Context) (store.QueueDepth, error)
}

// OutboxCollector exports the job queue's size, read from Redis at scrape time.
type OutboxCollector struct {
	q      QueueDepther
	jobs   *prometheus.Desc
	oldest *prometheus.Desc
	up     *prometheus.Desc
}

// NewOutboxCollector returns a collector over q; register it with a registry.
func NewOutboxCollector(q QueueDepther) *OutboxCollector {
	return &OutboxCollector{
		q:      q,
		jobs:   prometheus.NewDesc("approvalbot_outbox_jobs", "Jobs in the outbox by state: due (waiting to run), inflight (leased), dead (dead-lettered).", []string{"state"}, nil),
		oldest: prometheus.NewDesc("approvalbot_outbox_oldest_due_seconds", "How long the oldest due job has waited.", nil, nil),
		up:     prometheus.NewDesc("approvalbot_outbox_scrape_ok", "1 when the outbox could be read from Redis at this scrape.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *OutboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.jobs
	ch <- c.oldest
	ch <- c.up
}

// Collect implements prometheus.Collector.
func (c *OutboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	d, err := c.q.Depth(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(d.Due), "due")
	ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(d.InFlight), "inflight")
	ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(d.Dead), "dead")
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, d.OldestDue.Seconds())
}

// LaterWriteLosser counts the store's writes made off their caller's path
// that never applied; *store.Store implements it.
type LaterWriteLosser interface {
	LaterWritesLost() (confirms, deferrals store.LaterLost)
}

// laterWritesCollector is approvalbot_store_later_writes_lost_total{write,reason}.
type laterWritesCollector struct {
	s    LaterWriteLosser
	desc *prometheus.Desc
}

// NewLaterWritesCollector exports s's lost later writes (store.LaterWritesLost).
func NewLaterWritesCollector(s LaterWriteLosser) prometheus.Collector {
	return laterWritesCollector{s: s, desc: prometheus.NewDesc("approvalbot_store_later_writes_lost_total",
		"Writes the store makes off the request's path that never applied, by write (open_confirm: an open-request "+
			"slot stays reserved until the next reconcile; post_deferral: a post's job runs once more) and reason "+
			"(dropped: the backlog was full; failed: Redis refused it or did not answer).", []string{"write", "reason"}, nil)}
}

// Describe implements prometheus.Collector.
func (c laterWritesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c laterWritesCollector) Collect(ch chan<- prometheus.Metric) {
	confirms, deferrals := c.s.LaterWritesLost()
	for write, lost := range map[string]store.LaterLost{"open_confirm": confirms, "post_deferral": deferrals} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(lost.Dropped), write, "dropped")
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(lost.Failed), write, "failed")
	}
}

// OpenAger counts the open requests by age; *store.Store implements it.
type OpenAger interface {
	OpenByAge(ctx context.Context, bounds []time.Duration) ([]int64, error)
}

// openAges are the age buckets of approvalbot_open_requests: the bounds
// and a label for each bucket they make (one more than the bounds).
var (
	openAgeBounds = []time.Duration{time.Hour, 24 * time.Hour}
	openAgeLabels = []string{"<1h", "1h-1d", ">1d"}
)

// openScrapeTimeout bounds the Redis read of one scrape: a slow Redis must
// not hold the scrape (and Prometheus's timeout) hostage.
const openScrapeTimeout = time.Second

// OpenRequestsCollector exports the open requests by age, read from the
// store's open-request indexes at scrape time (a few ZCOUNTs per shard, no
// key-space scan), so the numbers are every replica's, not this process's.
type OpenRequestsCollector struct {
	store OpenAger
	log   *slog.Logger
	open  *prometheus.Desc
	up    *prometheus.Desc
}

// NewOpenRequestsCollector returns a collector over st that logs failed
// reads to log; register it with a registry.
func NewOpenRequestsCollector(st OpenAger, log *slog.Logger) *OpenRequestsCollector {
	return &OpenRequestsCollector{
		store: st, log: log,
		open: prometheus.NewDesc("approvalbot_open_requests",
			"Open requests (pending, partial, escalated) by age since received: <1h, 1h-1d, >1d.", []string{"age"}, nil),
		up: prometheus.NewDesc("approvalbot_open_requests_scrape_ok",
			"1 when the open requests could be counted in Redis at this scrape.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *OpenRequestsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.open
	ch <- c.up
}

// Collect implements prometheus.Collector.
func (c *OpenRequestsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), openScrapeTimeout)
	defer cancel()
	counts, err := c.store.OpenByAge(ctx, openAgeBounds)
	if err != nil {
		c.log.Warn("could not count the open requests for /metrics", "err", err)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	for i, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(n), openAgeLabels[i])
	}
}
