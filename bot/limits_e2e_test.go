package bot_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/bot"
)

// withLimits configures the harness's intake limits as the environment would.
func withLimits(t testing.TB, rate, rateOverrides string, maxOpen int, maxOpenOverrides string) harnessOption {
	return func(c *configT, _ *depsT) {
		var err error
		if *c, err = c.WithLimits(rate, rateOverrides, maxOpen, maxOpenOverrides); err != nil {
			t.Fatal(err)
		}
	}
}

// Through the whole service: the agent's request beyond its rate is 429
// with Retry-After, another agent is not affected, and an hour later (a
// token refilled) it is accepted; beyond its cap of open requests an agent
// is refused until one is withdrawn.
func TestIntakeLimits(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	h := newHarness(t, withClock(clk), withLimits(t, "1/h", "other:off", 0, "other:1"))
	h.accept(simple(t, "lim-1", nil, ""))
	r := h.do(http.MethodPost, "/v1/requests", tokenPM, "application/json", simple(t, "lim-2", nil, ""))
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("second POST within the hour: %d %s, want 429", r.Status, r.Body)
	}
	// The clock runs on, so the wait is an hour less however long this took.
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 3600 {
		t.Errorf("Retry-After = %q, want 1..3600 seconds", r.Header.Get("Retry-After"))
	}
	if m := r.json(t); m["limit"].(map[string]any)["name"] != "rate" || !strings.Contains(m["error"].(string), "INTAKE_RATE") {
		t.Errorf("429 body = %s", r.Body)
	}
	if r := h.do(http.MethodPost, "/v1/requests", tokenOther, "application/json", simple(t, "theirs-1", nil, "")); r.Status != http.StatusAccepted {
		t.Fatalf("another agent: %d %s, want 202", r.Status, r.Body)
	}
	if r := h.do(http.MethodPost, "/v1/requests", tokenOther, "application/json", simple(t, "theirs-2", nil, "")); r.Status != http.StatusTooManyRequests ||
		!strings.Contains(string(r.Body), "has 1 open, and may have at most 1") {
		t.Errorf("another agent beyond its cap: %d %s, want 429", r.Status, r.Body)
	}
	if r := h.do(http.MethodDelete, "/v1/requests/theirs-1", tokenOther, "", nil); r.Status != http.StatusOK {
		t.Fatalf("withdraw: %d %s", r.Status, r.Body)
	}
	if r := h.do(http.MethodPost, "/v1/requests", tokenOther, "application/json", simple(t, "theirs-2", nil, "")); r.Status != http.StatusAccepted {
		t.Errorf("after the withdrawal: %d %s, want 202", r.Status, r.Body)
	}
	clk.Set(clk.Now().Add(time.Hour))
	h.accept(simple(t, "lim-2", nil, ""))
}

func TestConfigIntakeLimits(t *testing.T) {
	clearEnv(t)
	t.Setenv("INTAKE_TOKENS", "pm:0123456789abcdef0123,batch:fedcba9876543210fedc")
	cfg, err := bot.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Limits()
	if l.Rate.Count != 120 || l.Rate.Per != time.Minute || l.Rate.Burst != 60 || l.MaxOpen != 1000 {
		t.Errorf("default limits = %+v, want 120/m burst 60 and 1000 open", l)
	}
	t.Setenv("INTAKE_RATE", "off")
	t.Setenv("INTAKE_RATE_OVERRIDES", "batch:10/s:20")
	t.Setenv("INTAKE_MAX_OPEN", "0")
	t.Setenv("INTAKE_MAX_OPEN_OVERRIDES", "batch:50")
	if cfg, err = bot.LoadConfig(); err != nil {
		t.Fatal(err)
	}
	if l := cfg.Limits(); !l.RateFor("pm").Off() || l.RateFor("batch").Burst != 20 || l.MaxOpenFor("pm") != 0 || l.MaxOpenFor("batch") != 50 {
		t.Errorf("limits = %+v", l)
	}
	t.Setenv("INTAKE_RATE", "lots")
	t.Setenv("INTAKE_RATE_OVERRIDES", "ghost:1/s")
	t.Setenv("INTAKE_MAX_OPEN", "-1")
	t.Setenv("INTAKE_MAX_OPEN_OVERRIDES", "batch")
	_, err = bot.LoadConfig()
	for _, want := range []string{`INTAKE_RATE: "lots" is not a rate`, `INTAKE_RATE_OVERRIDES must name agents of INTAKE_TOKENS, got "ghost"`,
		"INTAKE_MAX_OPEN must be 0 (no cap) or more", `INTAKE_MAX_OPEN_OVERRIDES: entry "batch" is not <agent>:<limit>`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// Two services over one Redis, an agent capped at 5 open requests, and 40
// of its requests at once split between them: exactly 5 are accepted and
// 35 refused with the open_cap 429, however the two interleave. A
// resubmission at the cap is still answered 200, and once one request is
// withdrawn (on either service) exactly one more gets in.
func TestIntakeOpenCapAcrossReplicas(t *testing.T) {
	t.Parallel()
	first := newHarness(t, withLimits(t, "off", "", 5, ""))
	procs := []*harness{first, newHarnessOn(t, first.rdb, first.prefix, first.emu, withLimits(t, "off", "", 5, ""))}
	post := func(i int, id string) response {
		return procs[i%2].do(http.MethodPost, "/v1/requests", tokenPM, "application/json", simple(t, id, nil, ""))
	}
	bodies := make([][]byte, 40)
	for i := range bodies {
		bodies[i] = simple(t, "flood-"+strconv.Itoa(i), nil, "")
	}
	var mu sync.Mutex
	var accepted []string
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Go(func() {
			r := procs[i%2].do(http.MethodPost, "/v1/requests", tokenPM, "application/json", bodies[i])
			mu.Lock()
			defer mu.Unlock()
			statuses[r.Status]++
			switch r.Status {
			case http.StatusAccepted:
				accepted = append(accepted, "flood-"+strconv.Itoa(i))
			case http.StatusTooManyRequests:
				if !strings.Contains(string(r.Body), `"name":"open_cap"`) || !strings.Contains(string(r.Body), `"max":5`) {
					t.Errorf("429 body = %s", r.Body)
				}
			}
		})
	}
	wg.Wait()
	if statuses[http.StatusAccepted] != 5 || statuses[http.StatusTooManyRequests] != 35 {
		t.Fatalf("statuses = %v; want 5 accepted, 35 refused", statuses)
	}
	if r := post(1, accepted[0]); r.Status != http.StatusOK {
		t.Errorf("resubmission at the cap: %d %s, want 200", r.Status, r.Body)
	}
	if r := procs[1].do(http.MethodDelete, "/v1/requests/"+accepted[0], tokenPM, "", nil); r.Status != http.StatusOK {
		t.Fatalf("withdraw: %d %s", r.Status, r.Body)
	}
	statuses = map[int]int{}
	for i := range 6 {
		wg.Go(func() {
			r := post(i, "more-"+strconv.Itoa(i))
			mu.Lock()
			defer mu.Unlock()
			statuses[r.Status]++
		})
	}
	wg.Wait()
	if statuses[http.StatusAccepted] != 1 || statuses[http.StatusTooManyRequests] != 5 {
		t.Errorf("after a withdrawal, statuses = %v; want 1 accepted, 5 refused", statuses)
	}
}
