package bot

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Cleanup is an ordered stack of stop functions, in the manner of Prometheus
// Alertmanager's app package: whatever starts or opens something pushes how
// to stop or release it, and Unwind runs them last pushed first. Pushing in
// the order things start therefore stops them in reverse dependency order,
// and a failure halfway through starting releases exactly what was opened.
// The zero value is an empty stack; it is safe for concurrent use.
type Cleanup struct {
	// OnStop, when set, is told each step Unwind has run, in order, with
	// the error it returned (Run logs them).
	OnStop func(name string, err error)

	mu    sync.Mutex
	steps []cleanupStep
}

type cleanupStep struct {
	name string
	stop func(context.Context) error
}

// Push adds stop, to be run by Unwind before everything pushed earlier.
// name says what it stops, in logs and errors.
func (c *Cleanup) Push(name string, stop func(ctx context.Context) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.steps = append(c.steps, cleanupStep{name: name, stop: stop})
}

// PushFunc is Push for a stop function that takes no context and cannot fail.
func (c *Cleanup) PushFunc(name string, stop func()) {
	c.Push(name, func(context.Context) error { stop(); return nil })
}

// Unwind runs every stop function, last pushed first, even when some fail,
// and empties the stack (a second Unwind does nothing). It returns the
// failures joined, each prefixed with its step's name.
func (c *Cleanup) Unwind(ctx context.Context) error {
	c.mu.Lock()
	steps := c.steps
	c.steps = nil
	c.mu.Unlock()
	var errs []error
	for i := len(steps) - 1; i >= 0; i-- {
		err := steps[i].stop(ctx)
		if c.OnStop != nil {
			c.OnStop(steps[i].name, err)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", steps[i].name, err))
		}
	}
	return errors.Join(errs...)
}

// Names of Run's stop steps, in the order Run stops them.
const (
	StepSocketMode = "socket mode"
	StepLongPolls  = "long polls"
	StepSandbox    = "sandbox"
	StepHTTP       = "http"
	StepJobs       = "jobs"
	StepAdmin      = "admin"
)

// Run listens on LISTEN_ADDR and serves the service's HTTP handler, drains
// the outbox (RunJobs) and, with SLACK_APP_TOKEN, receives Slack's requests
// over Socket Mode, until ctx ends or the HTTP server fails. When ctx ends,
// /readyz first answers 503 ("draining") for SHUTDOWN_DRAIN_DELAY while
// everything keeps serving, so load balancers stop sending traffic before
// the listener closes. Then it stops everything it started, in this order
// (each step logged as "stopped"):
//
//  1. Socket Mode: the Slack calls its envelopes cause run on the pool the
//     job runner closes when it ends, so no envelope may arrive after that.
//  2. Long polls: they answer now with the current state instead of holding
//     the HTTP shutdown for their whole wait; event streams end (clients
//     resume with Last-Event-ID).
//  3. The sandbox (local mode): its page's live update streams end, for the
//     same reason.
//  4. HTTP: the listener closes and in-flight requests finish, for at most
//     SHUTDOWN_TIMEOUT. Requests may still enqueue jobs and wake the
//     runner, so the runner stops after them.
//  5. Jobs: running jobs finish and settle (ack, retry), then the Slack
//     calls queued after acknowledged interactions drain.
//  6. Admin (ADMIN_ADDR set): the admin listener closes last, so a slow
//     shutdown can still be profiled; for at most SHUTDOWN_TIMEOUT, then
//     a profile still being taken is cut off.
//
// Redis is not Run's: the caller opened it and releases it after Run
// returns, since every step above may still use it. Run returns the error
// that ended it (a failed listen, a failed HTTP server), nil when ctx ended;
// a step that could not stop cleanly is logged, not returned, so a slow
// client at shutdown does not fail the process.
func (s *Service) Run(ctx context.Context) error {
	cfg, log := s.deps.Config, s.deps.Logger
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		s.Close()
		return fmt.Errorf("listen on %s: %w", cfg.ListenAddr, err)
	}
	var adminLn net.Listener
	if cfg.AdminAddr != "" {
		if adminLn, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
			_ = ln.Close()
			s.Close()
			return fmt.Errorf("listen on ADMIN_ADDR %s: %w", cfg.AdminAddr, err)
		}
	}
	build := ReadBuildInfo()
	log.InfoContext(ctx, "approvalbot listening", "addr", ln.Addr().String(), "version", build.Version, "commit", build.Commit,
		"local_mode", cfg.LocalMode(), "embedded_redis", cfg.EmbeddedRedis(), "socket_mode", cfg.SlackAppToken != "",
		"slack_http_endpoints", cfg.SlackSigningSecret != "")
	stops := &Cleanup{OnStop: func(name string, err error) {
		if err != nil {
			log.ErrorContext(ctx, name+" shutdown incomplete", "err", err)
			return
		}
		log.InfoContext(ctx, "stopped", "component", name)
	}}
	// Components outlive ctx: each stops when its step in stops runs.
	bg := context.WithoutCancel(ctx)

	// Pushed in the order they start, so they stop in the order above.
	if adminLn != nil {
		admin := s.adminServer(bg)
		log.InfoContext(ctx, "admin listener (/debug/pprof/, /metrics)", "addr", adminLn.Addr().String())
		go func() {
			if err := admin.Serve(adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.ErrorContext(ctx, "admin listener failed", "err", err)
			}
		}()
		stops.Push(StepAdmin, stopServer(admin, cfg.ShutdownTimeout))
	}
	stops.Push(StepJobs, goUntilStopped(bg, func(ctx context.Context) { _ = s.RunJobs(ctx) }))
	srv := s.httpServer(bg)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	stops.Push(StepHTTP, func(ctx context.Context) error {
		shutdownCtx, cancel := context.WithTimeout(ctx, cfg.ShutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	if s.deps.Sandbox != nil {
		stops.PushFunc(StepSandbox, s.deps.Sandbox.Close)
	}
	stops.PushFunc(StepLongPolls, s.Close)
	stops.Push(StepSocketMode, goUntilStopped(bg, func(ctx context.Context) { _ = s.RunSocketMode(ctx) }))

	select {
	case err = <-serveErr:
		err = fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
		// /readyz answers 503 from now on while everything still serves,
		// so load balancers take this process out of rotation before its
		// listener closes (SHUTDOWN_DRAIN_DELAY).
		s.drain.start()
		if cfg.ShutdownDrainDelay > 0 {
			log.InfoContext(ctx, "shutting down: /readyz is unready; still serving while load balancers stop sending traffic",
				"drain_delay", cfg.ShutdownDrainDelay)
			select {
			case <-s.drainTimer(cfg.ShutdownDrainDelay):
			case err = <-serveErr:
				err = fmt.Errorf("http server: %w", err)
			}
		}
		log.InfoContext(ctx, "shutting down: finishing in-flight requests and jobs", "timeout", cfg.ShutdownTimeout)
	}
	_ = stops.Unwind(bg) // OnStop logged each failure
	log.InfoContext(ctx, "approvalbot stopped")
	return err
}

// drainState is whether Run has begun shutting down: /readyz then answers
// 503 (status "draining") while the listener still serves.
type drainState struct {
	once    sync.Once
	started chan struct{}
}

func newDrainState() *drainState { return &drainState{started: make(chan struct{})} }

func (d *drainState) start() { d.once.Do(func() { close(d.started) }) }

func (d *drainState) draining() bool {
	select {
	case <-d.started:
		return true
	default:
		return false
	}
}

// Draining is closed when Run begins to shut down: from then on /readyz
// answers 503 while the listener keeps serving for SHUTDOWN_DRAIN_DELAY.
func (s *Service) Draining() <-chan struct{} { return s.drain.started }

// drainTimer is Deps.DrainTimer, or time.After.
func (s *Service) drainTimer(d time.Duration) <-chan time.Time {
	if s.deps.DrainTimer != nil {
		return s.deps.DrainTimer(d)
	}
	return time.After(d)
}

// goUntilStopped runs run in a goroutine under a context of its own, and
// returns the stop step that cancels that context and waits for run to
// return.
func goUntilStopped(parent context.Context, run func(context.Context)) func(context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
	}()
	return func(context.Context) error {
		cancel()
		<-done
		return nil
	}
}

// httpServer is the HTTP server of Run, with timeouts that bound what a slow
// or idle client can hold. Request contexts are not cancelled when Run's
// context ends: Shutdown lets in-flight requests finish instead.
func (s *Service) httpServer(base context.Context) *http.Server {
	return &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
}
