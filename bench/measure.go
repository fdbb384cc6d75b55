package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// Throughput is a closed loop of Concurrency senders against one server.
type Throughput struct {
	Requests     int64   `json:"requests"`
	Errors       int64   `json:"errors"`
	Seconds      float64 `json:"seconds"`
	PerSecond    float64 `json:"per_second"`
	ProcessCPU   float64 `json:"process_cpu_seconds"` // this process: server and load generator
	RedisCPU     float64 `json:"redis_cpu_seconds"`   // redis-server, from INFO cpu
	CPUPer1000   float64 `json:"process_cpu_seconds_per_1000"`
	RedisPer1000 float64 `json:"redis_cpu_seconds_per_1000"`
	// RedisCalls are the calls redis-server counted from the loop's first
	// send to its last answer (scripts' inner calls included: redisCalls),
	// for AllRequests: every request answered 2xx then, warm-up included.
	RedisCalls  redisCalls `json:"redis_calls,omitempty"`
	AllRequests int64      `json:"requests_in_all,omitempty"`
}

// Latency is an open loop at a fixed rate: request i is due at start + i/rate
// and its latency counts from then, so a slow server is not excused by the
// sender waiting for it (no coordinated omission).
type Latency struct {
	Rate     float64 `json:"rate"`
	Sent     int     `json:"sent"`
	Errors   int     `json:"errors"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
	Achieved float64 `json:"achieved_per_second"`
	// FirstError is the first failure's error, so a line with errors says
	// what they were (a status and body, or a transport error).
	FirstError string `json:"first_error,omitempty"`
}

// Burst is N requests into one channel with the emulator enforcing pacing.
type Burst struct {
	N            int     `json:"n"`
	IntervalMs   float64 `json:"interval_ms"`
	BoundSeconds float64 `json:"bound_seconds"` // N × interval
	Seconds      float64 `json:"seconds"`       // first intake to last accepted post
	Ratio        float64 `json:"ratio"`
	Posted       int     `json:"posted"`        // requests with a message
	PostCalls    int     `json:"post_calls_ok"` // accepted chat.postMessage calls
	Refused      int     `json:"post_calls_429"`
	Lost         int     `json:"lost"`
	Doubled      int     `json:"doubled"`
	OutOfOrder   int     `json:"out_of_order"` // posts that left before an earlier-arrived request's
	InOrder      bool    `json:"in_order"`
	TimedOut     bool    `json:"timed_out"`
}

func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// redisCPU is redis-server's used_cpu_user + used_cpu_sys.
func (e *env) redisCPU() float64 {
	info, err := e.rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		return 0
	}
	return infoFloat(info, "used_cpu_user") + infoFloat(info, "used_cpu_sys")
}

func infoFloat(info, field string) float64 {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// closedLoop runs conc senders against url for warm + d and counts what
// completes in d, with the CPU this process and redis-server spent then.
func (e *env) closedLoop(url string, conc int, warm, d time.Duration) Throughput {
	c := newClient()
	defer c.CloseIdleConnections()
	var cpu0, r0, cpu1, r1 float64
	calls0 := e.redisCalls()
	w := runClosedLoop(conc, warm, d, func() error {
		return post(c, url, e.requestBody(fmt.Sprintf("b%d", e.seq.Add(1))))
	}, func(start bool) {
		if start {
			cpu0, r0 = processCPU(), e.redisCPU()
		} else {
			cpu1, r1 = processCPU(), e.redisCPU()
		}
	})
	t := Throughput{Requests: w.ok, Errors: w.failed, Seconds: w.stopped.Sub(w.start).Seconds(),
		ProcessCPU: cpu1 - cpu0, RedisCPU: r1 - r0, RedisCalls: e.redisCalls().since(calls0), AllRequests: w.allOK}
	return t.rates()
}

// rates fills in t's figures per second and per 1,000 requests.
func (t Throughput) rates() Throughput {
	t.PerSecond = float64(t.Requests) / t.Seconds
	if t.Requests > 0 {
		t.CPUPer1000 = t.ProcessCPU / float64(t.Requests) * 1000
		t.RedisPer1000 = t.RedisCPU / float64(t.Requests) * 1000
	}
	return t
}

// add is t and u counted as one loop.
func (t Throughput) add(u Throughput) Throughput {
	t.Requests += u.Requests
	t.Errors += u.Errors
	t.Seconds += u.Seconds
	t.ProcessCPU += u.ProcessCPU
	t.RedisCPU += u.RedisCPU
	t.RedisCalls = t.RedisCalls.plus(u.RedisCalls)
	t.AllRequests += u.AllRequests
	return t.rates()
}

// window is what a closed loop did: the sends that succeeded or failed
// while it counted, all that succeeded (warm-up and the sends in flight at
// the end included), when counting started and stopped, and when the last
// send in flight was answered.
type window struct {
	ok, failed, allOK       int64
	start, stopped, drained time.Time
}

// runClosedLoop runs conc senders, each calling send again as soon as it
// returns, for warm and then d, counting the sends of d. mark is called
// (on the caller's goroutine) as counting starts (true) and stops (false).
func runClosedLoop(conc int, warm, d time.Duration, send func() error, mark func(start bool)) window {
	var counting atomic.Bool
	var ok, failed, allOK atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := send()
				if err == nil {
					allOK.Add(1)
				}
				if counting.Load() {
					if err != nil {
						failed.Add(1)
					} else {
						ok.Add(1)
					}
				}
			}
		})
	}
	time.Sleep(warm)
	var w window
	mark(true)
	w.start = time.Now()
	counting.Store(true)
	time.Sleep(d)
	counting.Store(false)
	w.stopped = time.Now()
	mark(false)
	close(stop)
	wg.Wait()
	w.drained = time.Now()
	w.ok, w.failed, w.allOK = ok.Load(), failed.Load(), allOK.Load()
	return w
}

// openLoop sends at rate for d, each request on its own goroutine at its
// scheduled time, and measures each from that time.
func (e *env) openLoop(url string, rate float64, d time.Duration) Latency {
	c := newClient()
	defer c.CloseIdleConnections()
	return openLoop(rate, d, func(int) func() error {
		body := e.requestBody(fmt.Sprintf("l%d", e.seq.Add(1)))
		return func() error { return post(c, url, body) }
	})
}

// openLoop makes rate × d sends: send i is prepared (prepare(i), before
// its time, so preparing is not counted) and started on its own goroutine
// at start + i/rate, and its latency counts from that scheduled time, so a
// slow server is not excused by the sender waiting for it (no coordinated
// omission).
func openLoop(rate float64, d time.Duration, prepare func(i int) (send func() error)) Latency {
	total := max(int(rate*d.Seconds()), 1)
	lat := make([]time.Duration, total)
	failed := make([]bool, total)
	var firstErr atomic.Pointer[string]
	var wg sync.WaitGroup
	start := time.Now().Add(10 * time.Millisecond)
	for i := range total {
		due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		send := prepare(i)
		if w := time.Until(due); w > 0 {
			time.Sleep(w)
		}
		wg.Go(func() {
			err := send()
			lat[i] = time.Since(due)
			failed[i] = err != nil
			if err != nil {
				msg := err.Error()
				firstErr.CompareAndSwap(nil, &msg)
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	l := Latency{Rate: rate, Sent: total}
	if p := firstErr.Load(); p != nil {
		l.FirstError = *p
	}
	ok := lat[:0:0]
	for i := range lat {
		if failed[i] {
			l.Errors++
		} else {
			ok = append(ok, lat[i])
		}
	}
	l.Achieved = float64(len(ok)) / el.Seconds()
	if len(ok) > 0 {
		slices.Sort(ok)
		l.P50ms = ms(percentile(ok, 0.50))
		l.P99ms = ms(percentile(ok, 0.99))
		l.MaxMs = ms(ok[len(ok)-1])
	}
	return l
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Intake is the throughput, latency and CPU of the bot and the floor.
type Intake struct {
	Concurrency int        `json:"concurrency"`
	Bot         Throughput `json:"bot"`   // every round's loops added up
	Floor       Throughput `json:"floor"` // the same
	Ratio       float64    `json:"ratio"` // bot / floor requests per second, as printed
	// Rounds are each round's own bot / floor ratio.
	Rounds []float64 `json:"round_ratios"`
}

// measureIntake runs rounds rounds of one closed loop against the floor and
// one against the bot, the floor first in odd rounds and second in even
// ones: a shared VM's speed drifts by tens of percent within a minute, and
// one pair measured one after the other took the drift for a difference.
func (e *env) measureIntake(conc int, d time.Duration, rounds int) (Intake, error) {
	in, err := e.newBot(e.prefix("intake"), slackemu.New(slackemu.Options{MaxCalls: 1000}), time.Second)
	if err != nil {
		return Intake{}, err
	}
	defer in.Close()
	floor := e.newFloor(e.prefix("floor"))
	defer floor.Close()
	warm := min(time.Second, d/5)
	r := Intake{Concurrency: conc}
	for i := range max(rounds, 1) {
		var bot, fl Throughput
		if i%2 == 0 {
			fl = e.closedLoop(floor.URL, conc, warm, d)
			bot = e.closedLoop(in.http.URL, conc, warm, d)
		} else {
			bot = e.closedLoop(in.http.URL, conc, warm, d)
			fl = e.closedLoop(floor.URL, conc, warm, d)
		}
		r.Rounds = append(r.Rounds, ratio(bot.PerSecond, fl.PerSecond))
		r.Bot, r.Floor = r.Bot.add(bot), r.Floor.add(fl)
	}
	r.Ratio = ratio(r.Bot.PerSecond, r.Floor.PerSecond)
	if r.Bot.Requests == 0 || r.Floor.Requests == 0 {
		return r, fmt.Errorf("intake: nothing accepted (bot %d errors, floor %d errors)", r.Bot.Errors, r.Floor.Errors)
	}
	return r, nil
}

// OpenLoop is intake latency at a fixed rate, bot and floor.
type OpenLoop struct {
	Bot   Latency `json:"bot"`
	Floor Latency `json:"floor"`
}

func (e *env) measureLatency(rate float64, d time.Duration) (OpenLoop, error) {
	in, err := e.newBot(e.prefix("latency"), slackemu.New(slackemu.Options{MaxCalls: 1000}), time.Second)
	if err != nil {
		return OpenLoop{}, err
	}
	defer in.Close()
	floor := e.newFloor(e.prefix("latfloor"))
	defer floor.Close()
	var r OpenLoop
	r.Floor = e.openLoop(floor.URL, rate, d)
	r.Bot = e.openLoop(in.http.URL, rate, d)
	if r.Bot.Errors == r.Bot.Sent {
		return r, errors.New("latency: every request failed")
	}
	return r, nil
}

// measureBurst sends n requests, one after another, all to the default
// channel, with the emulator answering 429 to any chat.postMessage to a
// channel sooner than interval after the previous one, and the bot pacing
// that channel at the same interval (SLACK_POST_INTERVAL). It times the
// first intake to the last accepted post and checks that each request was
// posted once, in the order it arrived.
func (e *env) measureBurst(n int, interval time.Duration) (Burst, error) {
	emu := slackemu.New(slackemu.Options{EnforcePacing: true, PacingInterval: interval})
	in, err := e.newBot(e.prefix("burst"), emu, interval)
	if err != nil {
		return Burst{}, err
	}
	defer in.Close()
	defer in.startJobs()()

	b := Burst{N: n, IntervalMs: ms(interval), BoundSeconds: (time.Duration(n) * interval).Seconds()}
	c := newClient()
	defer c.CloseIdleConnections()
	ids := make([]string, n)
	t0 := time.Now()
	for i := range ids {
		ids[i] = fmt.Sprintf("burst%d-%d", e.seq.Add(1), i)
		if err := post(c, in.http.URL, e.requestBody(ids[i])); err != nil {
			return b, fmt.Errorf("burst: request %d: %w", i, err)
		}
	}
	// Wait for n accepted posts, then a little longer to see any double.
	giveUp := time.Now().Add(time.Duration(float64(b.BoundSeconds)*10*float64(time.Second)) + 30*time.Second)
	for {
		ok, _ := postCalls(emu)
		if len(ok) >= n {
			break
		}
		if time.Now().After(giveUp) {
			b.TimedOut = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(3 * interval)
	ok, refused := postCalls(emu)
	b.PostCalls, b.Refused = len(ok), refused
	if len(ok) > 0 {
		b.Seconds = ok[len(ok)-1].At.Sub(t0).Seconds()
		b.Ratio = b.Seconds / b.BoundSeconds
	}
	// Each request's message, in the order the requests arrived.
	seen := map[string]bool{}
	var tss []string
	for _, id := range ids {
		rec, err := in.store.Get(context.Background(), id)
		if err != nil || !rec.Posted() {
			b.Lost++
			continue
		}
		b.Posted++
		if seen[rec.Slack.TS] {
			b.Doubled++
		}
		seen[rec.Slack.TS] = true
		tss = append(tss, rec.Slack.TS)
	}
	if b.PostCalls > b.Posted {
		b.Doubled += b.PostCalls - b.Posted
	}
	latest := ""
	for _, ts := range tss { // Slack ts: fixed-width "seconds.micros"
		if tsLess(ts, latest) {
			b.OutOfOrder++
		} else {
			latest = ts
		}
	}
	b.InOrder = b.OutOfOrder == 0 && b.Lost == 0
	return b, nil
}

// postCalls are the emulator's accepted chat.postMessage calls in the order
// it answered them, and how many it refused.
func postCalls(emu *slackemu.Server) (ok []slackemu.Call, refused int) {
	for _, c := range emu.CallsTo("chat.postMessage") {
		if c.Status == http.StatusOK && c.Error == "" {
			ok = append(ok, c)
		} else {
			refused++
		}
	}
	return ok, refused
}

// tsLess orders Slack message timestamps ("1700000000.000001").
func tsLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
