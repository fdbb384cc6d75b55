package main

import (
	"bytes"
	"fmt"
	"io"
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
}

// measureSustained runs conc closed-loop senders for warm + d against a bot
// whose job runner runs in the same process, with the product's defaults
// (32 workers, 250 ms poll), request i going to channel i mod channels, the
// bot pacing each channel at interval and the emulator answering every post
// at once (no enforced pace): the limit measured is approvalbot's, not
// Slack's. It counts what intake accepted and what the emulator accepted as
// posts over the same window, then stops sending and waits for the backlog
// to drain.
func (e *env) measureSustained(conc, channels int, interval, d time.Duration) (Sustained, error) {
	s := Sustained{Concurrency: conc, Channels: channels, IntervalMs: ms(interval)}
	posts := &postCounter{}
	in, err := e.newBot(e.prefix("sustained"), countingEmulator(channels, posts), interval)
	if err != nil {
		return s, err
	}
	defer in.Close()
	bodies := make([][]byte, channels)
	for i := range bodies {
		if bodies[i], err = e.channelBody(benchChannel(i)); err != nil {
			return s, err
		}
	}
	defer in.startJobs()()

	c := newClient()
	defer c.CloseIdleConnections()
	w := runClosedLoop(conc, min(time.Second, d/5), d, func() error {
		i := e.seq.Add(1)
		return post(c, in.http.URL, bytes.Replace(bodies[int(i)%channels], []byte(exampleID), fmt.Appendf(nil, "s%d", i), 1))
	}, func(bool) {})
	// Up to when the requests in flight were answered: none is accepted later.
	t0, t1 := w.start, w.drained
	s.Seconds = t1.Sub(t0).Seconds()
	s.Accepted, s.Errors = w.ok, w.failed
	s.AcceptedPS = float64(s.Accepted) / s.Seconds
	s.Posted = posts.between(t0, t1)
	s.PostedPS = float64(s.Posted) / s.Seconds
	s.TotalAccepted = w.allOK
	s.Backlog = s.TotalAccepted - int64(posts.between(time.Time{}, t1))

	giveUp := 2*time.Minute + time.Duration(max(s.Backlog, 0))*10*time.Millisecond
	s.Drained = waitPosts(posts, int(s.TotalAccepted), giveUp) == nil
	if s.Drained && s.Backlog > 0 {
		s.DrainSeconds = posts.last().Sub(t1).Seconds()
	}
	if err := in.waitQuiet(time.Minute); err != nil {
		return s, fmt.Errorf("sustained: %w", err)
	}
	return s, s.finish(posts, giveUp)
}

// finish counts what was posted in all and says what went wrong.
func (s *Sustained) finish(posts *postCounter, giveUp time.Duration) error {
	s.TotalPosted = posts.n.Load()
	if s.Accepted == 0 {
		return fmt.Errorf("sustained: nothing accepted (%d errors)", s.Errors)
	}
	if !s.Drained {
		return fmt.Errorf("sustained: backlog not drained after %v: %d of %d posted", giveUp, posts.n.Load(), s.TotalAccepted)
	}
	return nil
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
	posts := &postCounter{}
	in, err := e.newBot(e.prefix(fmt.Sprintf("sustained-%.0f", rate)), countingEmulator(channels, posts), interval)
	if err != nil {
		return s, err
	}
	defer in.Close()
	bodies := make([][]byte, channels)
	for i := range bodies {
		if bodies[i], err = e.channelBody(benchChannel(i)); err != nil {
			return s, err
		}
	}
	defer in.startJobs()()

	c := newClient()
	defer c.CloseIdleConnections()
	t0 := time.Now()
	l := openLoop(rate, d, func(i int) func() error {
		body := bytes.Replace(bodies[i%channels], []byte(exampleID), fmt.Appendf(nil, "o%d", e.seq.Add(1)), 1)
		return func() error { return post(c, in.http.URL, body) }
	})
	t1 := time.Now() // every request answered
	s.Seconds = t1.Sub(t0).Seconds()
	s.Accepted, s.Errors = int64(l.Sent-l.Errors), int64(l.Errors)
	s.AcceptedPS = float64(s.Accepted) / s.Seconds
	s.Posted = posts.between(t0, t1)
	s.PostedPS = float64(s.Posted) / s.Seconds
	s.TotalAccepted = s.Accepted
	s.Backlog = s.TotalAccepted - int64(posts.between(time.Time{}, t1))

	giveUp := 2*time.Minute + time.Duration(max(s.Backlog, 0))*10*time.Millisecond
	s.Drained = waitPosts(posts, int(s.TotalAccepted), giveUp) == nil
	if s.Drained && s.Backlog > 0 {
		s.DrainSeconds = posts.last().Sub(t1).Seconds()
	}
	if err := in.waitQuiet(time.Minute); err != nil {
		return s, fmt.Errorf("sustained at %.0f/s: %w", rate, err)
	}
	return s, s.finish(posts, giveUp)
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
}
