package bot_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/internal/sseclient"
	"github.com/approvalbot/approvalbot/store"
)

// eventStreams is how many GET /v1/events streams BenchmarkEventsFanOut
// holds open.
const eventStreams = 1000

// BenchmarkEventsFanOut measures what an agent watching its requests waits
// for: from an answer being recorded (store.Update, the transaction every
// Slack click and API answer ends in) to its input:received event reaching
// each of 1,000 SSE clients of GET /v1/events, all on one process over
// real Redis and loopback HTTP. One answer at a time: the next is made
// once every client has the previous one. It reports the p50 and p99 of
// every delivery (b.N × 1,000 samples), and deliveries per second.
func BenchmarkEventsFanOut(b *testing.B) {
	h := newHarness(b, func(c *configT, _ *depsT) { c.EventsMaxStreams = 2 * eventStreams })
	id := "bench-events"
	h.accept(exampleWith(b, id, nil))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: eventStreams}}
	var start atomic.Int64 // when the current answer began (UnixNano)
	var received atomic.Int64
	all := make(chan struct{}, 1)
	lat := make([][]time.Duration, eventStreams)
	var wg sync.WaitGroup
	for i := range eventStreams {
		s, err := sseclient.Open(ctx, client, h.http.URL+"/v1/events", tokenPM, "")
		if err != nil {
			b.Fatalf("stream %d: %v", i, err)
		}
		wg.Go(func() {
			for ev := range s.Events {
				if ev.Type != store.EventInputReceived {
					continue
				}
				lat[i] = append(lat[i], time.Since(time.Unix(0, start.Load())))
				if received.Add(1)%eventStreams == 0 {
					all <- struct{}{}
				}
			}
		})
	}
	n := 0
	b.ResetTimer()
	for b.Loop() {
		n++
		start.Store(time.Now().UnixNano())
		_, err := h.store.Update(ctx, id, func(store.Record) (*store.Change, error) {
			a := aah.Answer{DecisionID: "d3", Value: fmt.Sprint(n), By: aah.Person{ID: alice.id}, At: time.Now()}
			return &store.Change{Answers: []aah.Answer{a}, Bump: true,
				Audit: []store.AuditEvent{{Event: "answered", Actor: "human:" + alice.id, Data: map[string]any{"decision_id": "d3", "value": a.Value}}}}, nil
		})
		if err != nil {
			b.Fatal(err)
		}
		select {
		case <-all:
		case <-time.After(guard):
			b.Fatalf("answer %d: %d of %d deliveries after %s", n, received.Load(), n*eventStreams, guard)
		}
	}
	b.StopTimer()
	elapsed := b.Elapsed()
	cancel()
	wg.Wait()
	var every []time.Duration
	for _, l := range lat {
		every = append(every, l...)
	}
	slices.Sort(every)
	if len(every) != n*eventStreams {
		b.Fatalf("%d deliveries, want %d", len(every), n*eventStreams)
	}
	b.ReportMetric(float64(every[len(every)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(every[len(every)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(every))/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(eventStreams, "streams")
}
