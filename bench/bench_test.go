package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every measurement at a tiny size produces sane numbers. Nothing here
// asserts how fast anything is: the machine may be busy.
func TestSmoke(t *testing.T) {
	if os.Getenv("REDIS_URL") == "" {
		if _, err := exec.LookPath("redis-server"); err != nil {
			t.Skip("needs REDIS_URL or redis-server on PATH")
		}
	}
	cfg := Config{
		Only:     map[string]bool{},
		Duration: 300 * time.Millisecond, Concurrency: 4, Rounds: 2, Rates: []float64{60, 80},
		MemoryN: 20, BurstN: 20, BurstInterval: 20 * time.Millisecond,
		ClickRate: 40, SustainedC: 4, Channels: 4, SustainedPace: time.Millisecond,
		SustainedRates: []float64{50},
		InstrWarm:      20, InstrN: 10,
	}
	for _, m := range measurements {
		cfg.Only[m] = true
	}
	r, err := Run(cfg, t.Output())
	if err != nil {
		t.Fatal(err)
	}
	if r.Machine.Cores < 1 || r.Machine.Redis == "" || r.Machine.Redis == "unknown" {
		t.Errorf("machine: %+v", r.Machine)
	}
	in := r.Intake
	if in.Bot.Requests == 0 || in.Floor.Requests == 0 || in.Bot.Errors != 0 || in.Floor.Errors != 0 {
		t.Errorf("intake: %+v", in)
	}
	if in.Ratio <= 0 || in.Bot.CPUPer1000 <= 0 || in.Floor.CPUPer1000 <= 0 || in.Bot.RedisPer1000 <= 0 {
		t.Errorf("intake ratio or CPU: %+v", in)
	}
	// Every floor request is one SET; a create is many more calls.
	if in.Floor.AllRequests < in.Floor.Requests || in.Floor.RedisCalls["set"] < in.Floor.AllRequests {
		t.Errorf("floor's Redis calls: %d SETs for %d requests", in.Floor.RedisCalls["set"], in.Floor.AllRequests)
	}
	botCalls := float64(in.Bot.RedisCalls.total()) / float64(in.Bot.AllRequests)
	floorCalls := float64(in.Floor.RedisCalls.total()) / float64(in.Floor.AllRequests)
	if in.Bot.AllRequests < in.Bot.Requests || botCalls <= floorCalls {
		t.Errorf("Redis calls per request: bot %.1f (%v), floor %.1f", botCalls, in.Bot.RedisCalls, floorCalls)
	}
	if len(in.Rounds) != 2 || slices.Contains(in.Rounds, 0) {
		t.Errorf("intake rounds: %v, want 2 ratios", in.Rounds)
	}
	if len(r.Latency) != 2 {
		t.Errorf("latency: %d open loops, want one per rate", len(r.Latency))
	}
	for _, ol := range r.Latency {
		for name, l := range map[string]Latency{"bot": ol.Bot, "floor": ol.Floor} {
			if l.Sent < 10 || l.Errors != 0 || l.P50ms <= 0 || l.P99ms < l.P50ms || l.MaxMs < l.P99ms {
				t.Errorf("latency of %s: %+v", name, l)
			}
		}
	}
	for _, m := range []*Memory{r.Memory, r.MemoryPosted} {
		if m == nil || m.N != 20 || m.Keys == 0 || m.PerRequest <= 0 || m.UsedPerRequest <= 0 {
			t.Errorf("memory: %+v", m)
		}
	}
	if r.Memory.Posted || !r.MemoryPosted.Posted || r.MemoryPosted.MemoryUsage <= r.Memory.MemoryUsage {
		t.Errorf("memory: posted requests should hold more than unposted ones: %+v, %+v", r.Memory, r.MemoryPosted)
	}
	b := r.Burst
	if b.TimedOut || b.Posted != 20 || b.Lost != 0 || b.Doubled != 0 || b.PostCalls != 20 || b.Seconds <= 0 || b.Ratio <= 0 {
		t.Errorf("burst: %+v", b)
	}
	c := r.Clicks
	if c == nil || c.Requests != 3 || c.Recorded != 12 {
		t.Errorf("clicks: want 12 answers recorded on 3 requests: %+v", c)
	}
	for name, l := range map[string]Latency{"bot": c.Bot, "floor": c.Floor} {
		if l.Sent != 12 || l.Errors != 0 || l.P50ms <= 0 || l.P99ms < l.P50ms || l.MaxMs < l.P99ms {
			t.Errorf("clicks of %s: %+v", name, l)
		}
	}
	s := r.Sustained
	if s == nil || s.Accepted == 0 || s.Errors != 0 || s.AcceptedPS <= 0 || !s.Drained ||
		s.TotalPosted != s.TotalAccepted || s.Backlog < 0 || s.Posted > int(s.TotalAccepted) {
		t.Errorf("sustained: %+v", s)
	}
	if len(r.SustainedAt) != 1 {
		t.Fatalf("sustained open loops: %d, want one per rate", len(r.SustainedAt))
	}
	if s := r.SustainedAt[0]; s.Rate != 50 || s.Accepted != 15 || s.Errors != 0 || !s.Drained ||
		s.TotalPosted != s.TotalAccepted || s.Backlog < 0 || s.Posted > int(s.TotalAccepted) {
		t.Errorf("sustained at 50/s for 300ms: want 15 accepted, all posted: %+v", s)
	}
	// Without valgrind (CI installs none) it says so; with it, a create
	// takes redis-server hundreds of thousands of instructions.
	if in := r.Instructions; in == nil || (in.Skipped == "" && in.PerCreate < 10_000) || (in.Skipped != "" && in.PerCreate != 0) {
		t.Errorf("instructions: %+v", in)
	}
	var out strings.Builder
	printTable(&out, r, cfg)
	for _, want := range []string{"Machine:", "Intake, closed loop", "Redis calls per request", "open loop", "never posted (no job runner): MEMORY USAGE", "posted (runner ran, queue quiet): MEMORY USAGE", "Burst of 20", "Click ack", "Sustained end-to-end", "open loop 50 req/s", "instructions per create"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
