package bot

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/prometheus/client_golang/prometheus"
)

// Retention is RETENTION: how long closed requests and their exported
// audit are kept; 0 keeps everything. It reads Go durations ("720h") and
// whole days ("90d", "1d12h").
type Retention time.Duration

// MinRetention is the shortest RETENTION accepted (beside 0).
const MinRetention = time.Hour

// Decode implements envconfig.Decoder.
func (r *Retention) Decode(v string) error {
	d, err := parseRetention(v)
	if err != nil {
		return err
	}
	*r = Retention(d)
	return nil
}

func parseRetention(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	bad := fmt.Errorf("RETENTION %q is not a duration: use e.g. 90d, 720h, 1d12h, or 0 to keep everything", v)
	if v == "" || v == "0" {
		return 0, nil
	}
	days, rest, hasDays := strings.Cut(v, "d")
	if !hasDays {
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, bad
		}
		return d, nil
	}
	n, err := strconv.ParseInt(days, 10, 32)
	if err != nil {
		return 0, bad
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		more, err := time.ParseDuration(rest)
		if err != nil || strings.HasPrefix(rest, "-") || strings.HasPrefix(rest, "+") {
			return 0, bad
		}
		if n < 0 {
			more = -more
		}
		d += more
	}
	return d, nil
}

func (c *Config) validateRetention(add func(format string, args ...any)) {
	switch d := time.Duration(c.Retention); {
	case d < 0:
		add("RETENTION must not be negative, got %s (0 keeps everything)", d)
	case d > 0 && d < MinRetention:
		add("RETENTION must be at least 1h (or 0 to keep everything), got %s: closed requests are deleted that long after they close", d)
	}
}

// RetentionPeriod is RETENTION as a duration (0: keep everything).
func (c Config) RetentionPeriod() time.Duration { return time.Duration(c.Retention) }

// defaultRetentionInterval is how often each shard's retention sweep runs.
const defaultRetentionInterval = time.Hour

// RetentionStore is what the retention job needs of the store.
type RetentionStore interface {
	Sweep(ctx context.Context, shard int, o store.RetentionOptions) (store.SweepReport, error)
	RescheduleRetention(ctx context.Context, shard int, at time.Time) error
}

// retentionJob runs "retain:sNN", the retention sweep of one shard (see
// store.Sweep), and schedules its next run: every interval, or at once
// again while a run was cut short by its batch. It is a job of the outbox,
// so it survives restarts and runs in one process at a time. With
// retention off it ends (the job is not rescheduled).
type retentionJob struct {
	store     RetentionStore
	retention time.Duration
	interval  time.Duration
	now       func() time.Time
	metrics   *retentionMetrics
	log       *slog.Logger
}

func (h retentionJob) Handle(ctx context.Context, j store.Job) error {
	if h.retention <= 0 {
		return nil
	}
	rep, err := h.store.Sweep(ctx, j.Shard, store.RetentionOptions{Retention: h.retention})
	now := h.now()
	next := now.Add(h.interval)
	switch {
	case err != nil:
		h.log.ErrorContext(ctx, "retention sweep failed; it runs again", "shard", j.Shard, "err", err)
		next = now.Add(min(h.interval, time.Minute))
	case rep.More:
		next = now.Add(time.Second)
	}
	h.metrics.deleted.Add(float64(rep.Deleted))
	h.metrics.trimmed.Add(float64(rep.Trimmed))
	if rep.Deleted > 0 || rep.Trimmed > 0 {
		h.log.InfoContext(ctx, "retention sweep", "shard", j.Shard, "deleted_requests", rep.Deleted, "trimmed_audit_entries", rep.Trimmed)
	}
	if since := rep.UnexportedSince; !since.IsZero() && now.Sub(since) > h.retention {
		h.log.WarnContext(ctx, "the audit has not been exported for longer than RETENTION: closed requests past it are kept "+
			"until `approvalbot audit export` covers them", "shard", j.Shard, "unexported_since", since,
			"retention", h.retention, "closed_requests_waiting", rep.Waiting)
	}
	return h.store.RescheduleRetention(ctx, j.Shard, next)
}

func (h retentionJob) GaveUp(ctx context.Context, j store.Job, err error) {
	h.log.ErrorContext(ctx, "gave up on a retention sweep; rescheduling it", "shard", j.Shard, "err", err)
	if err := h.store.RescheduleRetention(ctx, j.Shard, h.now().Add(h.interval)); err != nil {
		h.log.ErrorContext(ctx, "could not reschedule the retention sweep; it is scheduled again at the next start", "shard", j.Shard, "err", err)
	}
}

// retentionMetrics count what the sweeps of this process did.
type retentionMetrics struct {
	deleted, trimmed prometheus.Counter
}

func newRetentionMetrics(reg prometheus.Registerer) *retentionMetrics {
	m := &retentionMetrics{
		deleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "approvalbot_retention_deleted_total",
			Help: "Closed requests deleted by the retention sweep (RETENTION), with their audit chains."}),
		trimmed: prometheus.NewCounter(prometheus.CounterOpts{Name: "approvalbot_retention_trimmed_audit_entries_total",
			Help: "Exported global audit entries older than RETENTION removed from the front of the shards' chains."}),
	}
	if reg != nil {
		reg.MustRegister(m.deleted, m.trimmed)
	}
	return m
}

// RetentionStater reads what the last sweeps recorded; *store.Store
// implements it.
type RetentionStater interface {
	Retention(ctx context.Context) (store.RetentionState, error)
}

// RetentionCollector exports, at scrape time, what the shards' last
// retention sweeps recorded in Redis (every replica's, not this process's).
type RetentionCollector struct {
	store             RetentionStater
	now               func() time.Time
	waiting, unexport *prometheus.Desc
}

// NewRetentionCollector returns a collector over st; register it when
// RETENTION is on.
func NewRetentionCollector(st RetentionStater, now func() time.Time) *RetentionCollector {
	return &RetentionCollector{store: st, now: now,
		waiting: prometheus.NewDesc("approvalbot_retention_waiting_for_export_requests",
			"Closed requests past RETENTION kept only because no export covers their audit yet (as the last sweeps saw).", nil, nil),
		unexport: prometheus.NewDesc("approvalbot_audit_unexported_seconds",
			"Age of the oldest audit entry no completed export covers (0: all are), as the last sweeps saw.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *RetentionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.waiting
	ch <- c.unexport
}

// Collect implements prometheus.Collector.
func (c *RetentionCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), openScrapeTimeout)
	defer cancel()
	st, err := c.store.Retention(ctx)
	if err != nil {
		return
	}
	age := 0.0
	if !st.UnexportedSince.IsZero() {
		age = max(c.now().Sub(st.UnexportedSince).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(st.Waiting))
	ch <- prometheus.MustNewConstMetric(c.unexport, prometheus.GaugeValue, age)
}
