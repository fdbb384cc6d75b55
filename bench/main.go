// Command bench measures issue #17's figures in one run, side by side with a
// floor server: intake throughput against a minimal handler that decodes the
// same JSON body and makes one Redis round trip (same redis-server, same
// concurrency, closed loop); intake latency at fixed open-loop rates
// (measured from each request's scheduled time); Redis bytes per pending
// request, never posted and posted; a burst into one channel with the Slack
// emulator enforcing its per-channel pace; CPU-seconds per 1,000 requests;
// click-ack latency at a fixed open-loop rate of signed clicks on posted
// requests, against a floor that verifies, decodes and makes one round trip;
// sustained end-to-end throughput (accepted and posted) across channels
// with the job runner in process; and redis-server's instructions per
// create, counted by valgrind's callgrind (when installed), which do not
// move with the machine's load as its CPU time does.
//
//	go run ./bench [-only intake,latency,memory,burst,clicks,sustained,instructions] [-duration 5s] [-c 32]
//	               [-rate 500,1000] [-memory-n 1000] [-burst-n 300] [-burst-interval 100ms]
//	               [-click-rate 500] [-sustained-c 64] [-channels 64] [-sustained-interval 1ms]
//	               [-instructions-warm 4000] [-instructions-n 2000] [-callgrind-out file] [-json]
//
// It needs REDIS_URL or a redis-server on PATH (started on a free loopback
// port and stopped at the end); every key it writes is deleted at the end.
// The instruction count runs a redis-server of its own, under valgrind.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Config is one run's sizes.
type Config struct {
	Only        map[string]bool
	Duration    time.Duration // each closed and open loop
	Concurrency int
	Rounds      int
	Rates       []float64 // one open loop per rate
	MemoryN     int
	// InstrWarm and InstrN: creates made before redis-server's
	// instructions are counted, and counted (Instructions).
	InstrWarm, InstrN int
	// CallgrindOut, when set, is where the counted creates' callgrind
	// profile is kept (callgrind_annotate reads it: which of Redis's
	// functions the instructions went to).
	CallgrindOut  string
	BurstN        int
	BurstInterval time.Duration
	ClickRate     float64 // clicks/s of the click-ack open loop
	SustainedC    int     // closed-loop senders of the sustained run
	Channels      int     // channels the sustained run spreads over
	SustainedPace time.Duration
	// SustainedRates: one open-loop sustained run per rate, after the
	// closed loop.
	SustainedRates []float64
	LogLevel       slog.Level // the bots' log lines at or above it go to Run's log writer
	// Keep leaves every key the run wrote in Redis (with REDIS_URL: a
	// redis-server started here stops with the run), to look at with
	// redis-cli, e.g. MEMORY USAGE of each key under a memory prefix.
	Keep bool
}

// Machine is where the run was.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	LoadAvg   string `json:"loadavg_at_start"`
	Go        string `json:"go"`
	Redis     string `json:"redis"`
	RedisFrom string `json:"redis_from"`
}

// Results is everything one run measured; a section is nil when skipped.
type Results struct {
	Machine      Machine       `json:"machine"`
	Intake       *Intake       `json:"intake,omitempty"`
	Latency      []OpenLoop    `json:"latency,omitempty"`       // one per -rate
	Memory       *Memory       `json:"memory,omitempty"`        // never posted
	MemoryPosted *Memory       `json:"memory_posted,omitempty"` // the same after the runner posted them
	Burst        *Burst        `json:"burst,omitempty"`
	Clicks       *Clicks       `json:"clicks,omitempty"`
	Sustained    *Sustained    `json:"sustained,omitempty"`
	SustainedAt  []Sustained   `json:"sustained_open_loop,omitempty"` // one per -sustained-rate
	Instructions *Instructions `json:"instructions,omitempty"`
}

var measurements = []string{"intake", "latency", "memory", "burst", "clicks", "sustained", "instructions"}

func main() {
	only := flag.String("only", strings.Join(measurements, ","), "measurements to run: "+strings.Join(measurements, ","))
	cfg := Config{}
	flag.DurationVar(&cfg.Duration, "duration", 5*time.Second, "length of each closed loop (intake) and open loop (latency)")
	flag.IntVar(&cfg.Concurrency, "c", 32, "closed-loop senders, the same for the bot and the floor")
	flag.IntVar(&cfg.Rounds, "rounds", 3, "rounds of intake's closed loops (a floor's and a bot's, of -duration each, in alternating order), added up")
	rates := flag.String("rate", "500,1000", "open-loop rates, requests/s, comma-separated: one latency measurement each")
	flag.IntVar(&cfg.MemoryN, "memory-n", 1000, "pending requests created for the memory measurement")
	flag.IntVar(&cfg.InstrWarm, "instructions-warm", 4000, "creates made before redis-server's instructions are counted (instructions)")
	flag.IntVar(&cfg.InstrN, "instructions-n", 2000, "creates whose redis-server instructions are counted (instructions)")
	flag.StringVar(&cfg.CallgrindOut, "callgrind-out", "", "keep the counted creates' callgrind profile in this file, for callgrind_annotate (instructions)")
	flag.IntVar(&cfg.BurstN, "burst-n", 300, "requests in the one-channel burst")
	flag.DurationVar(&cfg.BurstInterval, "burst-interval", 100*time.Millisecond, "per-channel posting pace of the emulator and the bot (10 posts/s)")
	flag.Float64Var(&cfg.ClickRate, "click-rate", 500, "click-ack open-loop rate, clicks/s")
	flag.IntVar(&cfg.SustainedC, "sustained-c", 64, "closed-loop senders of the sustained end-to-end run (0: skip the closed loop, run only -sustained-rate's)")
	flag.IntVar(&cfg.Channels, "channels", 64, "channels the sustained run's requests spread over")
	sustainedRates := flag.String("sustained-rate", "1000,2000", "open-loop rates of the sustained end-to-end run, requests/s, comma-separated (empty: none)")
	flag.DurationVar(&cfg.SustainedPace, "sustained-interval", time.Millisecond, "per-channel posting pace of the bot in the sustained run (the emulator does not enforce one)")
	flag.TextVar(&cfg.LogLevel, "log", slog.LevelError, "the bots' log level on stderr (e.g. WARN shows why a click was not recorded)")
	flag.BoolVar(&cfg.Keep, "keep", false, "leave the keys the run wrote in Redis (REDIS_URL), under prefixes named bench<pid>-<n>-<measure>")
	asJSON := flag.Bool("json", false, "print JSON instead of a table")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (bot, floor and load generator) to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: cpuprofile:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	var err error
	if cfg.Rates, err = parseRates("-rate", *rates); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if *sustainedRates != "" {
		if cfg.SustainedRates, err = parseRates("-sustained-rate", *sustainedRates); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
	}
	cfg.Only = map[string]bool{}
	for _, m := range strings.Split(*only, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		if !strings.Contains(","+strings.Join(measurements, ",")+",", ","+m+",") {
			fmt.Fprintf(os.Stderr, "bench: unknown measurement %q (have %s)\n", m, strings.Join(measurements, ","))
			os.Exit(2)
		}
		cfg.Only[m] = true
	}
	r, err := Run(cfg, os.Stderr)
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(r)
	} else {
		printTable(os.Stdout, r, cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// Run makes the measurements cfg names, in order, on one redis-server.
func Run(cfg Config, logw io.Writer) (Results, error) {
	var r Results
	r.Machine = machine()
	e, err := newEnv(logw, cfg.LogLevel)
	if err != nil {
		return r, err
	}
	e.keep = cfg.Keep
	defer e.Close()
	r.Machine.Redis = redisVersion(e)
	r.Machine.RedisFrom = "REDIS_URL"
	if e.started != nil {
		r.Machine.RedisFrom = "redis-server started by bench"
	}
	if cfg.Only["intake"] {
		v, err := e.measureIntake(cfg.Concurrency, cfg.Duration, cfg.Rounds)
		r.Intake = &v
		if err != nil {
			return r, err
		}
	}
	if cfg.Only["latency"] {
		for _, rate := range cfg.Rates {
			v, err := e.measureLatency(rate, cfg.Duration)
			r.Latency = append(r.Latency, v)
			if err != nil {
				return r, err
			}
		}
	}
	if cfg.Only["memory"] {
		v, err := e.measureMemory(cfg.MemoryN, false)
		r.Memory = &v
		if err != nil {
			return r, err
		}
		p, err := e.measureMemory(cfg.MemoryN, true)
		r.MemoryPosted = &p
		if err != nil {
			return r, err
		}
	}
	if cfg.Only["burst"] {
		v, err := e.measureBurst(cfg.BurstN, cfg.BurstInterval)
		r.Burst = &v
		if err != nil {
			return r, err
		}
	}
	if cfg.Only["clicks"] {
		v, err := e.measureClicks(cfg.ClickRate, cfg.Duration)
		r.Clicks = &v
		if err != nil {
			return r, err
		}
	}
	if cfg.Only["sustained"] && cfg.SustainedC > 0 {
		v, err := e.measureSustained(cfg.SustainedC, cfg.Channels, cfg.SustainedPace, cfg.Duration)
		r.Sustained = &v
		if err != nil {
			return r, err
		}
	}
	if cfg.Only["sustained"] {
		for _, rate := range cfg.SustainedRates {
			v, err := e.measureSustainedAt(rate, cfg.Channels, cfg.SustainedPace, cfg.Duration)
			r.SustainedAt = append(r.SustainedAt, v)
			if err != nil {
				return r, err
			}
		}
	}
	if cfg.Only["instructions"] {
		v, err := e.measureInstructions(cfg.InstrWarm, cfg.InstrN, cfg.CallgrindOut)
		r.Instructions = &v
		if err != nil {
			return r, err
		}
	}
	return r, nil
}

func machine() Machine {
	m := Machine{CPU: "unknown", Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	} else if out, err := exec.Command("uptime").Output(); err == nil {
		m.LoadAvg = strings.TrimSpace(string(out))
	}
	return m
}

func redisVersion(e *env) string {
	info, _ := e.rdb.Info(bgctx(), "server").Result()
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "unknown"
}

func printTable(out io.Writer, r Results, cfg Config) {
	m := r.Machine
	fmt.Fprintf(out, "Machine: %s, %d cores, load average %s at start; %s; Redis %s (%s)\n\n",
		m.CPU, m.Cores, m.LoadAvg, m.Go, m.Redis, m.RedisFrom)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "Measure\tapprovalbot\tfloor\tbot/floor or note")
	fmt.Fprintln(w, "-------\t-----------\t-----\t-----------------")
	if in := r.Intake; in != nil {
		fmt.Fprintf(w, "Intake, closed loop (%d senders, %d rounds of %v each), req/s\t%.0f\t%.0f\t%.2f×\n",
			in.Concurrency, len(in.Rounds), cfg.Duration, in.Bot.PerSecond, in.Floor.PerSecond, in.Ratio)
		rounds := make([]string, len(in.Rounds))
		for i, x := range in.Rounds {
			rounds[i] = fmt.Sprintf("%.2f×", x)
		}
		fmt.Fprintf(w, "  each round's bot/floor\t\t\t%s\n", strings.Join(rounds, " "))
		fmt.Fprintf(w, "  errors\t%d\t%d\t\n", in.Bot.Errors, in.Floor.Errors)
		fmt.Fprintf(w, "CPU-s per 1,000 requests, this process (server + load generator)\t%.3f\t%.3f\t%.2f×\n",
			in.Bot.CPUPer1000, in.Floor.CPUPer1000, ratio(in.Bot.CPUPer1000, in.Floor.CPUPer1000))
		fmt.Fprintf(w, "CPU-s per 1,000 requests, redis-server\t%.3f\t%.3f\t%.2f×\n",
			in.Bot.RedisPer1000, in.Floor.RedisPer1000, ratio(in.Bot.RedisPer1000, in.Floor.RedisPer1000))
		fmt.Fprintf(w, "Redis calls per request, scripts' inner calls included (INFO commandstats)\t%s\t%s\t\n",
			in.Bot.RedisCalls.perRequest(in.Bot.AllRequests, 5), in.Floor.RedisCalls.perRequest(in.Floor.AllRequests, 1))
	}
	for _, l := range r.Latency {
		fmt.Fprintf(w, "Intake latency, open loop %.0f req/s for %v: p50 / p99 / max ms\t%.2f / %.2f / %.2f\t%.2f / %.2f / %.2f\tp99 %.2f×\n",
			l.Bot.Rate, cfg.Duration, l.Bot.P50ms, l.Bot.P99ms, l.Bot.MaxMs, l.Floor.P50ms, l.Floor.P99ms, l.Floor.MaxMs, ratio(l.Bot.P99ms, l.Floor.P99ms))
		fmt.Fprintf(w, "  sent / errors / achieved req/s\t%d / %d / %.0f\t%d / %d / %.0f\t%s\n",
			l.Bot.Sent, l.Bot.Errors, l.Bot.Achieved, l.Floor.Sent, l.Floor.Errors, l.Floor.Achieved, firstErrors(l.Bot, l.Floor))
	}
	for _, mm := range []*Memory{r.Memory, r.MemoryPosted} {
		if mm == nil {
			continue
		}
		what := "never posted (no job runner)"
		if mm.Posted {
			what = "posted (runner ran, queue quiet)"
		}
		fmt.Fprintf(w, "Redis per pending request, %s: MEMORY USAGE (%d requests, %d keys), bytes\t%.0f\t\t\n", what, mm.N, mm.Keys, mm.PerRequest)
		fmt.Fprintf(w, "Redis per pending request, %s: INFO used_memory delta, bytes\t%.0f\t\t\n", what, mm.UsedPerRequest)
	}
	if b := r.Burst; b != nil {
		fmt.Fprintf(w, "Burst of %d into one channel at 1 post/%v: first intake → last post, s\t%.2f\tbound %.2f\t%.2f× the bound\n",
			b.N, time.Duration(b.IntervalMs*float64(time.Millisecond)), b.Seconds, b.BoundSeconds, b.Ratio)
		fmt.Fprintf(w, "  posted / lost / doubled / out of order / 429s\t%d / %d / %d / %d / %d\t\tin arrival order: %v%s\n",
			b.Posted, b.Lost, b.Doubled, b.OutOfOrder, b.Refused, b.InOrder, map[bool]string{true: " (TIMED OUT)"}[b.TimedOut])
	}
	if c := r.Clicks; c != nil {
		fmt.Fprintf(w, "Click ack, open loop %.0f clicks/s for %v: p50 / p99 / max ms\t%.2f / %.2f / %.2f\t%.2f / %.2f / %.2f\tp99 %.2f×\n",
			c.Bot.Rate, cfg.Duration, c.Bot.P50ms, c.Bot.P99ms, c.Bot.MaxMs, c.Floor.P50ms, c.Floor.P99ms, c.Floor.MaxMs, ratio(c.Bot.P99ms, c.Floor.P99ms))
		fmt.Fprintf(w, "  sent / errors / achieved clicks/s\t%d / %d / %.0f\t%d / %d / %.0f\t%s\n",
			c.Bot.Sent, c.Bot.Errors, c.Bot.Achieved, c.Floor.Sent, c.Floor.Errors, c.Floor.Achieved, firstErrors(c.Bot, c.Floor))
		fmt.Fprintf(w, "  answers recorded / clicks acked (on %d posted requests; -log WARN says why one was not)\t%d / %d\t\t\n",
			c.Requests, c.Recorded, c.Bot.Sent-c.Bot.Errors)
	}
	if s := r.Sustained; s != nil {
		printSustained(w, s, cfg)
	}
	for i := range r.SustainedAt {
		printSustained(w, &r.SustainedAt[i], cfg)
	}
	if in := r.Instructions; in != nil {
		what := fmt.Sprintf("%.0f", in.PerCreate)
		if in.Skipped != "" {
			what = "skipped: " + in.Skipped
		}
		fmt.Fprintf(w, "redis-server instructions per create (callgrind; %d creates after %d)\t%s\t\t\n", in.Creates, in.Warm, what)
	}
	_ = w.Flush()
}

// firstErrors names the first error of each side that had one, cut short
// to stay on one line.
func firstErrors(bot, floor Latency) string {
	var out []string
	for _, s := range []struct{ name, err string }{{"bot", bot.FirstError}, {"floor", floor.FirstError}} {
		if s.err == "" {
			continue
		}
		e := strings.Join(strings.Fields(s.err), " ")
		if len(e) > 80 {
			e = e[:80] + "…"
		}
		out = append(out, s.name+" first error: "+e)
	}
	return strings.Join(out, "; ")
}

// parseRates reads the flag name's rates: positive requests/s,
// comma-separated.
func parseRates(name, s string) ([]float64, error) {
	var rates []float64
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive rate", name, f)
		}
		rates = append(rates, v)
	}
	if len(rates) == 0 {
		return nil, fmt.Errorf("%s: no rate", name)
	}
	return rates, nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
