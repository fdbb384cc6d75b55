package main

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// JobStats is what the bot's job runner did in a window, per request
// accepted in it, read from the bot's own metrics (approvalbot_jobs_total,
// approvalbot_job_lateness_seconds, approvalbot_job_duration_seconds): how
// many runs each request cost, how long jobs waited past their due time for
// a worker, and how long a run held one. It tells whether posting is short
// of workers (lateness grows while runs stay short) or of CPU (runs grow
// too, each round trip waiting for a core).
type JobStats struct {
	// PostRuns counts every run of a post job; PostRunsRescheduled those
	// that ended rescheduled: mostly a post that found posts ahead of it in
	// its channel and was told when its turn comes.
	PostRuns            float64 `json:"post_runs_per_request"`
	PostRunsRescheduled float64 `json:"post_runs_rescheduled_per_request"`
	HomeRuns            float64 `json:"home_runs_per_request"`
	OtherRuns           float64 `json:"other_runs_per_request"`
	LatenessMs          float64 `json:"mean_lateness_ms"` // every kind
	RunMs               float64 `json:"mean_run_ms"`      // every kind
}

// jobCounts is a snapshot of the runner's metrics.
type jobCounts struct {
	runs                         map[string]float64 // by kind
	postRescheduled              float64
	lateSum, lateN, runSum, runN float64
}

func snapshotJobs(g prometheus.Gatherer) jobCounts {
	c := jobCounts{runs: map[string]float64{}}
	families, _ := g.Gather() // a partial answer still counts what it has
	for _, f := range families {
		for _, m := range f.GetMetric() {
			kind, result := label(m, "kind"), label(m, "result")
			switch f.GetName() {
			case "approvalbot_jobs_total":
				c.runs[kind] += m.GetCounter().GetValue()
				if kind == "post" && result == "rescheduled" {
					c.postRescheduled += m.GetCounter().GetValue()
				}
			case "approvalbot_job_lateness_seconds":
				c.lateSum += m.GetHistogram().GetSampleSum()
				c.lateN += float64(m.GetHistogram().GetSampleCount())
			case "approvalbot_job_duration_seconds":
				c.runSum += m.GetHistogram().GetSampleSum()
				c.runN += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return c
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// since is what happened between before and c, per request of accepted.
func (c jobCounts) since(before jobCounts, accepted int64) JobStats {
	per := func(v float64) float64 { return v / float64(max(accepted, 1)) }
	var s JobStats
	for kind, n := range c.runs {
		d := n - before.runs[kind]
		switch kind {
		case "post":
			s.PostRuns = per(d)
		case "home":
			s.HomeRuns = per(d)
		default:
			s.OtherRuns += per(d)
		}
	}
	s.PostRunsRescheduled = per(c.postRescheduled - before.postRescheduled)
	if n := c.lateN - before.lateN; n > 0 {
		s.LatenessMs = (c.lateSum - before.lateSum) / n * 1000
	}
	if n := c.runN - before.runN; n > 0 {
		s.RunMs = (c.runSum - before.runSum) / n * 1000
	}
	return s
}
