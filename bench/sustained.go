package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Sustained is end-to-end throughput: requests accepted and posted, with
// the job runner in the bot process as in production, across many channels.
type Sustained struct {
	// Rate is the open loop's requests/s (measureSustainedAt); 0 for the
	// closed loop, which runs Concurrency senders instead.
	Rate        float64 `json:"rate,omitempty"`
	Concurrency int     `json:"concurrency,omitempty"`
	Channels    int     `json:"channels"`
	IntervalMs  float64 `json:"interval_ms"` // the bot's per-channel posting pace
	Seconds     float64 `json:"seconds"`     // the measured window, after a warm-up
	Accepted    int64   `json:"accepted"`    // intake 202s in the window
	Errors      int64   `json:"errors"`      // intake failures in the window
	AcceptedPS  float64 `json:"accepted_per_second"`
	Posted      int     `json:"posted"` // posts the emulator accepted in the window
	PostedPS    float64 `json:"posted_per_second"`
	// Backlog is every request accepted since the load began that had no
	// post yet when the load stopped.
	Backlog int64 `json:"backlog_at_end"`
	// DrainSeconds is from the end of the load until the last of them was
	// posted (0 with no backlog); Drained is false when it gave up.
	DrainSeconds  float64 `json:"drain_seconds"`
	Drained       bool    `json:"drained"`
	TotalAccepted int64   `json:"total_accepted"` // warm-up included
	TotalPosted   int64   `json:"total_posted"`   // after draining: more than accepted means doubles
	// Jobs is what the job runner did in the window.
	Jobs JobStats `json:"jobs"`
}

// sustainedBot is what both sustained runs share: a bot whose job runner
// runs in the same process, with the product's defaults (32 workers, 250 ms
// poll), pacing each channel at interval, and an emulator that answers every
// post at once (no enforced pace) and counts them: the limit measured is
// approvalbot's, not Slack's.
type sustainedBot struct {
	in       *instance
	posts    *postCounter
	bodies   [][]byte // one per channel
	stopJobs func()
}

func (e *env) startSustained(name string, channels int, interval time.Duration) (*sustainedBot, error) {
	b := &sustainedBot{posts: &postCounter{}, bodies: make([][]byte, channels)}
	var err error
	if b.in, err = e.newBot(e.prefix(name), countingEmulator(channels, b.posts), interval); err != nil {
		return nil, err
	}
	for i := range b.bodies {
		if b.bodies[i], err = e.channelBody(benchChannel(i)); err != nil {
			b.in.Close()
			return nil, err
		}
	}
	b.stopJobs = b.in.startJobs()
	return b, nil
}

func (b *sustainedBot) Close() {
	b.stopJobs()
	b.in.Close()
}

// send posts request i (to channel i mod channels) under the id tag+seq.
func (b *sustainedBot) send(c *http.Client, i int, id string) error {
	return post(c, b.in.http.URL, bytes.Replace(b.bodies[i%len(b.bodies)], []byte(exampleID), []byte(id), 1))
}

// settle counts the posts of the window t0–t1 (s.Accepted and
// s.TotalAccepted set), then waits for the backlog to drain and the bot
// to be quiet.
func (b *sustainedBot) settle(s *Sustained, t0, t1 time.Time, jobs0 jobCounts) error {
	s.Jobs = snapshotJobs(b.in.reg).since(jobs0, s.Accepted)
	s.Seconds = t1.Sub(t0).Seconds()
	s.AcceptedPS = float64(s.Accepted) / s.Seconds
	s.Posted = b.posts.between(t0, t1)
	s.PostedPS = float64(s.Posted) / s.Seconds
	s.Backlog = s.TotalAccepted - int64(b.posts.between(time.Time{}, t1))

	giveUp := 2*time.Minute + time.Duration(max(s.Backlog, 0))*10*time.Millisecond
	s.Drained = waitPosts(b.posts, int(s.TotalAccepted), giveUp) == nil
	if s.Drained && s.Backlog > 0 {
		s.DrainSeconds = b.posts.last().Sub(t1).Seconds()
	}
	if err := b.in.waitQuiet(time.Minute); err != nil {
		return fmt.Errorf("sustained: %w", err)
	}
	s.TotalPosted = b.posts.n.Load()
	if s.Accepted == 0 {
		return fmt.Errorf("sustained: nothing accepted (%d errors)", s.Errors)
	}
	if !s.Drained {
		return fmt.Errorf("sustained: backlog not drained after %v: %d of %d posted", giveUp, s.TotalPosted, s.TotalAccepted)
	}
	return nil
}

// measureSustained runs conc closed-loop senders for warm + d against a
// sustainedBot, request i going to channel i mod channels. It counts what
// intake accepted and what the emulator accepted as posts over the same
// window, then stops sending and waits for the backlog to drain.
func (e *env) measureSustained(conc, channels int, interval, d time.Duration) (Sustained, error) {
	s := Sustained{Concurrency: conc, Channels: channels, IntervalMs: ms(interval)}
	b, err := e.startSustained("sustained", channels, interval)
	if err != nil {
		return s, err
	}
	defer b.Close()
	c := newClient()
	defer c.CloseIdleConnections()
	var jobs0 jobCounts
	w := runClosedLoop(conc, min(time.Second, d/5), d, func() error {
		i := e.seq.Add(1)
		return b.send(c, int(i), fmt.Sprintf("s%d", i))
	}, func(start bool) {
		if start {
			jobs0 = snapshotJobs(b.in.reg)
		}
	})
	// Up to when the requests in flight were answered: none is accepted later.
	s.Accepted, s.Errors, s.TotalAccepted = w.ok, w.failed, w.allOK
	return s, b.settle(&s, w.start, w.drained, jobs0)
}

// measureSustainedAt is measureSustained with an open loop: requests go at
// rate for d (each at its scheduled time, however long the ones before it
// take), so what it shows is whether posting keeps up with a given
// arrival rate: posted/s in the window close to accepted/s, and a backlog
// at the end of about what the last second brought, drained at once. (The
// closed loop sends as fast as intake answers, which leaves the job runner
// only what intake does not use.)
func (e *env) measureSustainedAt(rate float64, channels int, interval, d time.Duration) (Sustained, error) {
	s := Sustained{Rate: rate, Channels: channels, IntervalMs: ms(interval)}
	b, err := e.startSustained(fmt.Sprintf("sustained-%.0f", rate), channels, interval)
	if err != nil {
		return s, err
	}
	defer b.Close()
	c := newClient()
	defer c.CloseIdleConnections()
	t0, jobs0 := time.Now(), snapshotJobs(b.in.reg)
	l := openLoop(rate, d, func(i int) func() error {
		id := fmt.Sprintf("o%d", e.seq.Add(1))
		return func() error { return b.send(c, i, id) }
	})
	// Every request answered: none is accepted later.
	s.Accepted, s.Errors = int64(l.Sent-l.Errors), int64(l.Errors)
	s.TotalAccepted = s.Accepted
	return s, b.settle(&s, t0, time.Now(), jobs0)
}

func printSustained(w io.Writer, s *Sustained, cfg Config) {
	pace := time.Duration(s.IntervalMs * float64(time.Millisecond))
	if s.Rate > 0 {
		note := "keeps up"
		if s.PostedPS < 0.9*s.AcceptedPS || float64(s.Backlog) > s.Rate {
			note = "falls behind"
		}
		fmt.Fprintf(w, "Sustained end-to-end, open loop %.0f req/s (%d channels, pace %v, runner in process, %v): accepted / posted req/s\t%.0f / %.0f\t\t%s (goal ≥ 2,000)\n",
			s.Rate, s.Channels, pace, cfg.Duration, s.AcceptedPS, s.PostedPS, note)
	} else {
		fmt.Fprintf(w, "Sustained end-to-end, closed loop (%d senders, %d channels, pace %v, runner in process, %v): accepted / posted req/s\t%.0f / %.0f\t\tgoal ≥ 2,000\n",
			s.Concurrency, s.Channels, pace, cfg.Duration, s.AcceptedPS, s.PostedPS)
	}
	fmt.Fprintf(w, "  accepted / posted / errors in the window; backlog at end; drained in s\t%d / %d / %d; %d; %.2f%s\t\t\n",
		s.Accepted, s.Posted, s.Errors, s.Backlog, s.DrainSeconds, map[bool]string{false: " (NOT DRAINED)"}[s.Drained])
	fmt.Fprintf(w, "  posted / accepted in all (warm-up and drain included)\t%d / %d\t\t\n", s.TotalPosted, s.TotalAccepted)
	j := s.Jobs
	fmt.Fprintf(w, "  job runs per request in the window: post (rescheduled) / home / other; mean ms late, mean ms a run\t%.2f (%.2f) / %.2f / %.2f; %.1f, %.1f\t\t\n",
		j.PostRuns, j.PostRunsRescheduled, j.HomeRuns, j.OtherRuns, j.LatenessMs, j.RunMs)
}
