package handlers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A panicking call is logged; the worker goes on with the next one.
func TestAsyncSurvivesPanics(t *testing.T) {
	t.Parallel()
	a := NewAsync(1, 4)
	defer a.Close()
	a.Go("panics", func(context.Context) { panic("boom") })
	done := make(chan struct{})
	a.Go("after the panic", func(context.Context) { close(done) })
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the worker died with the panicking call")
	}
}

// A full queue drops calls instead of blocking the ack; Close runs what is
// queued and later calls are dropped.
func TestAsyncIsBounded(t *testing.T) {
	t.Parallel()
	a := NewAsync(1, 1)
	block := make(chan struct{})
	var ran atomic.Int32
	a.Go("busy", func(context.Context) { <-block })
	// The worker stays busy until block closes, so Go calls that return
	// at all did not wait for room in the queue.
	submitted := make(chan struct{})
	go func() {
		defer close(submitted)
		for range 10 {
			a.Go("queued or dropped", func(context.Context) { ran.Add(1) })
		}
	}()
	select {
	case <-submitted:
	case <-time.After(time.Minute):
		t.Fatal("Go blocked on a full queue")
	}
	close(block)
	a.Close()
	if n := ran.Load(); n > 1 {
		t.Errorf("%d queued calls ran, want at most one (queue of 1)", n)
	}
	a.Go("after close", func(context.Context) { t.Error("ran after Close") })
}
