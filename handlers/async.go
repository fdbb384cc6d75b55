package handlers

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Async runs Slack API calls after an interaction was acknowledged, on a
// fixed number of workers with a bounded queue: a burst of clicks cannot
// start unbounded goroutines, and a full queue drops the call (and logs it)
// rather than delaying the ack. The calls are best effort by nature (an
// ephemeral reply, a modal whose trigger expires in three seconds); durable
// work goes through the job queue instead.
type Async struct {
	queue   chan task
	wg      sync.WaitGroup
	log     *slog.Logger
	timeout time.Duration
	mu      sync.RWMutex // guards closed against a send on the closed queue
	closed  bool
}

type task struct {
	name string
	fn   func(ctx context.Context)
}

// NewAsync starts workers that take calls from a queue of the given size.
func NewAsync(workers, queue int) *Async {
	a := &Async{queue: make(chan task, queue), log: slog.New(slog.DiscardHandler), timeout: 10 * time.Second}
	for range workers {
		a.wg.Go(func() {
			for t := range a.queue {
				a.run(t)
			}
		})
	}
	return a
}

// run calls one task; a panic in it is logged, not fatal to the process.
func (a *Async) run(t task) {
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			a.log.Error("async Slack call panicked", "call", t.name, "panic", v)
		}
	}()
	t.fn(ctx)
}

// WithLogger sets where dropped calls are reported.
func (a *Async) WithLogger(l *slog.Logger) *Async { a.log = l; return a }

// Go queues fn; it never blocks. After Close it drops fn.
func (a *Async) Go(name string, fn func(ctx context.Context)) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		return
	}
	select {
	case a.queue <- task{name: name, fn: fn}:
	default:
		a.log.Warn("async queue full: a Slack call was dropped", "call", name)
	}
}

// Close stops taking calls and waits for the queued ones to finish.
func (a *Async) Close() {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.queue)
	}
	a.mu.Unlock()
	a.wg.Wait()
}
