package bot_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/internal/sseclient"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/slack-go/slack"
)

// Cleanup runs its steps last pushed first, all of them even when some
// fail, names the failures, and runs each step once.
func TestCleanupUnwindsLastFirst(t *testing.T) {
	t.Parallel()
	var ran, told []string
	c := bot.Cleanup{OnStop: func(name string, err error) { told = append(told, name) }}
	for _, name := range []string{"redis", "jobs", "http"} {
		c.Push(name, func(context.Context) error {
			ran = append(ran, name)
			if name == "jobs" {
				return errors.New("still busy")
			}
			return nil
		})
	}
	err := c.Unwind(t.Context())
	if want := []string{"http", "jobs", "redis"}; !slices.Equal(ran, want) || !slices.Equal(told, want) {
		t.Errorf("ran %v, told %v; want %v for both", ran, told, want)
	}
	if err == nil || err.Error() != "jobs: still busy" {
		t.Errorf("Unwind = %v, want the failing step named", err)
	}
	if err := c.Unwind(t.Context()); err != nil || len(ran) != 3 {
		t.Errorf("a second Unwind ran steps again (%v) or failed: %v", ran, err)
	}
}

// Run starts everything and, when its context ends, stops Socket Mode
// first, then answers long polls, closes the sandbox, shuts the HTTP server
// down and stops the job runner last, as its doc comment says and why.
// Each component's stop is recorded (logged as "stopped") as it happens.
func TestRunStopsComponentsInOrder(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{})
	t.Cleanup(func() { _ = emu.Close() })
	logs := &runLogs{}
	sb := &fakeSandbox{}
	h := newHarnessOn(t, rdb, prefix, emu, func(c *configT, d *depsT) {
		c.SlackAppToken, c.ListenAddr, c.ShutdownTimeout = emu.AppToken(), "127.0.0.1:0", guard
		d.SocketMode = slack.New(emu.Token(), slack.OptionAppLevelToken(emu.AppToken()),
			slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(emu.Client()))
		d.Logger, d.Sandbox = slog.New(logs), sb
	})
	if !sb.attached() {
		t.Fatal("NewService did not attach its handler to the sandbox")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.svc.Run(ctx) }()
	if err := emu.WaitSocketConnected(ctxTimeout(t, guard)); err != nil {
		t.Fatal("Run never connected over Socket Mode:", err)
	}
	select {
	case <-h.svc.SlackReady(): // the job runner confirmed the token: it runs
	case <-ctxTimeout(t, guard).Done():
		t.Fatal("Run never started the job runner")
	}
	base := "http://" + logs.attr("approvalbot listening", "addr")
	resp, err := http.Get(base + "/sandbox/")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Fatalf("GET /sandbox/ on Run's listener = %d, want the sandbox's %d", resp.StatusCode, http.StatusTeapot)
	}

	// An open event stream ends at the long polls' step, so the HTTP
	// shutdown does not wait SHUTDOWN_TIMEOUT for it.
	stream, err := sseclient.Open(context.Background(), http.DefaultClient, base+"/v1/events", tokenPM, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()

	stopping := time.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after its context ended: %v", err)
	}
	took := time.Since(stopping)
	// Run has returned, so the server has ended the stream; the client
	// notices when it reads the end, which a busy machine may delay.
	select {
	case <-stream.Done():
	case <-time.After(guard):
		t.Error("an event stream outlived Run")
	}
	if took >= guard/2 {
		t.Errorf("Run took %s to stop: the HTTP shutdown waited for an event stream", took)
	}
	want := []string{bot.StepSocketMode, bot.StepLongPolls, bot.StepSandbox, bot.StepHTTP, bot.StepJobs}
	if got := logs.stopped(); !slices.Equal(got, want) {
		t.Errorf("Run stopped %v, want %v", got, want)
	}
	if !sb.isClosed() {
		t.Error("the sandbox was not closed")
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("the HTTP server still answers after Run returned")
	}
}

// A listener Run cannot open ends Run at once with the reason, before any
// component starts, so there is nothing to stop.
func TestRunFailsToListen(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	logs := &runLogs{}
	h := newHarness(t, func(c *configT, d *depsT) {
		c.ListenAddr, d.Logger = taken.Addr().String(), slog.New(logs)
	})
	if err := h.svc.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "listen on "+taken.Addr().String()) {
		t.Fatalf("Run on a taken address = %v, want a listen error", err)
	}
	if got := logs.stopped(); len(got) != 0 {
		t.Errorf("Run stopped %v, but had started nothing", got)
	}
}

// fakeSandbox records what the service does with local mode's sandbox.
type fakeSandbox struct {
	mu     sync.Mutex
	bot    http.Handler
	closed bool
}

func (f *fakeSandbox) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusTeapot)
}
func (f *fakeSandbox) Attach(h http.Handler) { f.mu.Lock(); f.bot = h; f.mu.Unlock() }
func (f *fakeSandbox) Close()                { f.mu.Lock(); f.closed = true; f.mu.Unlock() }
func (f *fakeSandbox) attached() bool        { f.mu.Lock(); defer f.mu.Unlock(); return f.bot != nil }
func (f *fakeSandbox) isClosed() bool        { f.mu.Lock(); defer f.mu.Unlock(); return f.closed }

var _ bot.Sandbox = (*fakeSandbox)(nil)

// runLogs keeps every log record's message and attributes.
type runLogs struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *runLogs) Enabled(context.Context, slog.Level) bool { return true }
func (r *runLogs) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *runLogs) WithGroup(string) slog.Handler            { return r }
func (r *runLogs) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}

// attr is attribute key of the first record with message msg (Run logs
// "approvalbot listening" as soon as it listens, before it starts anything
// the test waits for).
func (r *runLogs) attr(msg, key string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.records {
		if rec.Message != msg {
			continue
		}
		val := ""
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				val = a.Value.String()
			}
			return val == ""
		})
		return val
	}
	return ""
}

// stopped are the components of the "stopped" records, in order.
func (r *runLogs) stopped() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.records {
		if rec.Message == "stopped" {
			rec.Attrs(func(a slog.Attr) bool {
				if a.Key == "component" {
					out = append(out, a.Value.String())
				}
				return true
			})
		}
	}
	return out
}
