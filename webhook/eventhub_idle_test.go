package webhook_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/webhook"
)

type hubCtxKey struct{}

// countedEvents counts the reads the hub itself makes (its context carries
// hubCtxKey), apart from the streams' own catch-up reads.
type countedEvents struct {
	*store.Store
	after, tails atomic.Int64
}

func (c *countedEvents) EventsAfter(ctx context.Context, shard int, after string, count int64) ([]store.Event, error) {
	if ctx.Value(hubCtxKey{}) != nil {
		c.after.Add(1)
	}
	return c.Store.EventsAfter(ctx, shard, after, count)
}

func (c *countedEvents) EventTails(ctx context.Context) ([]string, error) {
	if ctx.Value(hubCtxKey{}) != nil {
		c.tails.Add(1)
	}
	return c.Store.EventTails(ctx)
}

// With no stream open the hub reads nothing however many changes come; a
// stream opened afterwards, resuming from before those changes, gets each
// of them once, and what happens next from the hub.
func TestEventHubReadsNothingWhileIdle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), hubCtxKey{}, true))
	t.Cleanup(cancel)
	src := &countedEvents{Store: e.st}
	changes := make(chan string) // unbuffered: a send returns once the hub took it
	hub := webhook.NewEventHub(ctx, src, changes, webhook.EventHubOptions{Poll: time.Hour})
	a := e.api(func(o *webhook.Options) { o.Events = hub })

	e.createFor("pm", "idle-1")
	changes <- "idle-1"
	evs, err := e.st.EventsAfter(context.Background(), store.ShardOf("idle-1"), "0-0", 10)
	mustNil(t, err)
	if len(evs) != 1 {
		t.Fatalf("events of idle-1: %+v", evs)
	}
	resume := evs[0].ID
	const n = 20
	want := map[string]int{}
	for i := range n {
		d := fmt.Sprintf("d%d", i)
		e.answer("idle-1", d, "U1")
		changes <- "idle-1"
		want["idle-1/"+store.EventInputReceived+"/"+d]++
	}
	if got, tails := src.after.Load(), src.tails.Load(); got != 0 || tails != 0 {
		t.Fatalf("with no stream open the hub read %d times (and the tails %d times), want none", got, tails)
	}

	s := a.open("/v1/requests/idle-1/events", tokenPM, resume)
	seen := map[string]int{}
	for range n {
		seen[next(t, s).key()]++
	}
	if got := src.after.Load(); got != 0 {
		t.Errorf("the hub read the streams %d times for changes before the first stream opened, want none", got)
	}
	if got := src.tails.Load(); got != 1 {
		t.Errorf("the hub read the tails %d times when the first stream opened, want once", got)
	}
	// Live: only the hub delivers this one (the stream caught up already).
	e.answer("idle-1", "live", "U1")
	changes <- "idle-1"
	want["idle-1/"+store.EventInputReceived+"/live"]++
	ev := next(t, s)
	seen[ev.key()]++
	last := ev.ID // where a stream opened after the close resumes
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("events seen %v, want each of %v once", seen, want)
	}
	if ev, ok := s.Next(200 * time.Millisecond); ok {
		t.Errorf("an extra event: %+v", ev)
	}
	reads := src.after.Load()
	if reads == 0 {
		t.Error("the hub did not read the stream for a change while a stream was open")
	}

	// Once the last stream closed the hub goes idle again (at its next
	// wake-up), and the next stream makes it read the tails afresh.
	s.Close()
	waitStreams(t, hub, 0)
	want, seen = map[string]int{}, map[string]int{}
	for i := range n {
		d := fmt.Sprintf("again%d", i)
		e.answer("idle-1", d, "U1")
		changes <- "idle-1"
		want["idle-1/"+store.EventInputReceived+"/"+d]++
	}
	if got := src.after.Load(); got != reads {
		t.Errorf("the hub read the streams %d times after the last stream closed, want none", got-reads)
	}
	r := a.open("/v1/requests/idle-1/events", tokenPM, last)
	for range n {
		seen[next(t, r).key()]++
	}
	if got, tails := src.after.Load(), src.tails.Load(); got != reads || tails != 2 {
		t.Errorf("reopened: the hub read the streams %d more times and the tails %d times in all, want none and 2", got-reads, tails)
	}
	e.answer("idle-1", "live2", "U1")
	changes <- "idle-1"
	want["idle-1/"+store.EventInputReceived+"/live2"]++
	seen[next(t, r).key()]++
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("reopened: events seen %v, want each of %v once", seen, want)
	}
	if ev, ok := r.Next(200 * time.Millisecond); ok {
		t.Errorf("reopened: an extra event: %+v", ev)
	}
}

// waitStreams waits until n streams are registered with the hub (a closed
// stream unregisters when its handler notices the client left).
func waitStreams(t *testing.T, hub *webhook.EventHub, n int) {
	t.Helper()
	guard := time.Now().Add(time.Minute)
	for hub.Len() != n {
		if time.Now().After(guard) {
			t.Fatalf("%d streams registered, want %d", hub.Len(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
