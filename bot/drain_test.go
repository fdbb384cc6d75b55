package bot_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"
)

// At SIGTERM (Run's context ending) /readyz answers 503 "draining" at once,
// while the listener still serves everything else as usual, for
// SHUTDOWN_DRAIN_DELAY: load balancers probing readiness stop sending new
// traffic before the listener closes. Only then does the shutdown proceed.
// The test holds the drain delay open itself (Deps.DrainTimer): no sleeps.
func TestReadinessFlipsBeforeTheListenerCloses(t *testing.T) {
	t.Parallel()
	logs := &runLogs{}
	release := make(chan time.Time)
	asked := make(chan time.Duration, 1)
	h := newHarness(t, func(c *configT, d *depsT) {
		c.ListenAddr, c.ShutdownTimeout, c.ShutdownDrainDelay = "127.0.0.1:0", guard, 7*time.Second
		d.Logger = slog.New(logs)
		d.DrainTimer = func(d time.Duration) <-chan time.Time { asked <- d; return release }
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.svc.Run(ctx) }()
	select {
	case <-h.svc.SlackReady(): // Run listens before it starts the jobs that confirm the token
	case <-ctxTimeout(t, guard).Done():
		t.Fatal("Run never started the job runner")
	}
	base := "http://" + logs.attr("approvalbot listening", "addr")
	if code, status := getStatus(t, base+"/readyz"); code != http.StatusOK || status != "ok" {
		t.Fatalf("/readyz before shutdown: %d %q", code, status)
	}

	cancel()
	select {
	case <-h.svc.Draining():
	case <-ctxTimeout(t, guard).Done():
		t.Fatal("Run did not begin draining when its context ended")
	}
	if code, status := getStatus(t, base+"/readyz"); code != http.StatusServiceUnavailable || status != "draining" {
		t.Errorf("/readyz while draining: %d %q, want 503 \"draining\"", code, status)
	}
	if code, _ := getStatus(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while draining: %d, want 200 (the process is alive)", code)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/requests", nil)
	req.Header.Set("Authorization", "Bearer "+tokenPM)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the API while draining: %v %v, want it served", resp, err)
	} else {
		_ = resp.Body.Close()
	}
	select {
	case d := <-asked:
		if d != 7*time.Second {
			t.Errorf("Run waited %s, want SHUTDOWN_DRAIN_DELAY (7s)", d)
		}
	case <-ctxTimeout(t, guard).Done():
		t.Fatal("Run never waited for the drain delay")
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned (%v) before the drain delay ended", err)
	default:
	}
	if got := logs.stopped(); len(got) != 0 {
		t.Errorf("Run stopped %v during the drain delay, want nothing yet", got)
	}

	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("the listener still answers after Run returned")
	}
}

// getStatus is a GET's status code and the "status" member of its JSON body.
func getStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var v struct{ Status string }
	_ = json.Unmarshal(body, &v)
	return resp.StatusCode, v.Status
}
