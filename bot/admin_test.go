package bot_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/bot"
)

// get fetches url, returning its status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// pprofPaths are net/http/pprof's endpoints (a second's CPU profile and
// trace are left out: they take that long).
var pprofPaths = []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/heap", "/debug/pprof/cmdline", "/debug/pprof/symbol"}

// With ADMIN_ADDR, Run serves net/http/pprof and /metrics on a listener of
// its own, never on the public one, and closes it last at shutdown.
func TestAdminListenerServesPprof(t *testing.T) {
	t.Parallel()
	logs := &runLogs{}
	h := newHarness(t, func(c *configT, d *depsT) {
		c.ListenAddr, c.AdminAddr, c.ShutdownTimeout, c.ShutdownDrainDelay = "127.0.0.1:0", "127.0.0.1:0", guard, 0
		d.Logger = slog.New(logs)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.svc.Run(ctx) }()
	select {
	case <-h.svc.SlackReady(): // Run listens (both) before it starts the jobs
	case <-ctxTimeout(t, guard).Done():
		t.Fatal("Run never started the job runner")
	}
	public := "http://" + logs.attr("approvalbot listening", "addr")
	admin := "http://" + logs.attr("admin listener (/debug/pprof/, /metrics)", "addr")
	if admin == "http://" || admin == public {
		t.Fatalf("admin listener address %q (public %q)", admin, public)
	}
	for _, p := range pprofPaths {
		if code, _ := get(t, admin+p); code != http.StatusOK {
			t.Errorf("admin GET %s = %d, want 200", p, code)
		}
		if code, body := get(t, public+p); code != http.StatusNotFound {
			t.Errorf("public GET %s = %d (%.80q), want 404: profiles must never be public", p, code, body)
		}
	}
	if code, body := get(t, admin+"/debug/pprof/"); !strings.Contains(body, "goroutine") {
		t.Errorf("admin /debug/pprof/ = %d, not pprof's index: %.200q", code, body)
	}
	if code, body := get(t, admin+"/metrics"); code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Errorf("admin /metrics = %d, lacks go_goroutines", code)
	}
	if code, _ := get(t, admin+"/v1/requests"); code != http.StatusNotFound {
		t.Errorf("admin GET /v1/requests = %d, want 404: the admin listener serves only the operators' endpoints", code)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := logs.stopped(); len(got) == 0 || got[len(got)-1] != bot.StepAdmin || slices.Index(got, bot.StepAdmin) != len(got)-1 {
		t.Errorf("Run stopped %v, want the admin listener once, last", got)
	}
	if _, err := http.Get(admin + "/debug/pprof/"); err == nil {
		t.Error("the admin listener still answers after Run returned")
	}
}

// Without ADMIN_ADDR nothing serves profiles: the public handler answers
// 404 to every pprof path, although the binary links net/http/pprof.
func TestPublicListenerNeverServesPprof(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, p := range pprofPaths {
		if r := h.do(http.MethodGet, p, "", "", nil); r.Status != http.StatusNotFound {
			t.Errorf("public GET %s = %d, want 404", p, r.Status)
		}
	}
}

// A taken ADMIN_ADDR ends Run at once with the reason.
func TestRunFailsToListenOnAdminAddr(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	logs := &runLogs{}
	h := newHarness(t, func(c *configT, d *depsT) {
		c.ListenAddr, c.AdminAddr, d.Logger = "127.0.0.1:0", taken.Addr().String(), slog.New(logs)
	})
	if err := h.svc.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "ADMIN_ADDR "+taken.Addr().String()) {
		t.Fatalf("Run on an unusable ADMIN_ADDR = %v, want a listen error", err)
	}
	if got := logs.stopped(); len(got) != 0 {
		t.Errorf("Run stopped %v, but had started nothing", got)
	}
}

// ADMIN_ADDR: empty is off; otherwise host:port, never where LISTEN_ADDR
// listens.
func TestConfigAdminAddr(t *testing.T) {
	for _, tc := range []struct {
		admin, listen, problem string
	}{
		{"", "", ""},
		{"127.0.0.1:6060", "", ""},
		{"[::1]:6060", "", ""},
		{":6060", ":8080", ""},
		{"10.0.0.5:8080", "127.0.0.1:8080", ""},
		{"6060", "", "ADMIN_ADDR must be host:port"},
		{"localhost:pprof", "", "ADMIN_ADDR must be host:port"},
		{"127.0.0.1:70000", "", "ADMIN_ADDR must be host:port"},
		{":8080", "", "must not be LISTEN_ADDR's address"}, // LISTEN_ADDR's default
		{"127.0.0.1:8080", ":8080", "must not be LISTEN_ADDR's address"},
		{"0.0.0.0:9000", "127.0.0.1:9000", "must not be LISTEN_ADDR's address"},
		{"[::]:9000", "10.1.2.3:9000", "must not be LISTEN_ADDR's address"},
		{"127.0.0.1:9000", "127.0.0.1:9000", "must not be LISTEN_ADDR's address"},
	} {
		t.Run(tc.admin+"_"+tc.listen, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("ADMIN_ADDR", tc.admin)
			if tc.listen != "" {
				t.Setenv("LISTEN_ADDR", tc.listen)
			}
			c, err := bot.LoadConfig()
			switch {
			case tc.problem == "" && err != nil:
				t.Errorf("ADMIN_ADDR=%q LISTEN_ADDR=%q: %v", tc.admin, tc.listen, err)
			case tc.problem == "" && c.AdminAddr != tc.admin:
				t.Errorf("AdminAddr = %q, want %q", c.AdminAddr, tc.admin)
			case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
				t.Errorf("ADMIN_ADDR=%q LISTEN_ADDR=%q: %v, want %q", tc.admin, tc.listen, err, tc.problem)
			}
		})
	}
}
