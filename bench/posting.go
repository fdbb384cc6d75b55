package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// What the measurements that post share: an emulator whose workspace has
// many channels and that counts the requests' messages as they are posted,
// the job runner started as production starts it, and waiting for it.

// benchChannel is the id of the emulator's i-th added channel.
func benchChannel(i int) string { return fmt.Sprintf("C0BENCH%02d", i) }

// benchWorkspace is the emulator's default workspace plus n channels the bot
// is a member of, so that posts can spread over channels and per-channel
// pacing is not what limits them.
func benchWorkspace(n int) *slackemu.Workspace {
	ws := slackemu.DefaultWorkspace()
	for i := range n {
		ws.Channels = append(ws.Channels, slackemu.Channel{ID: benchChannel(i), Name: fmt.Sprintf("bench-%02d", i), IsMember: true})
	}
	return &ws
}

// postCounter counts the new top-level channel messages the emulator
// accepts (a request's post; not its edits, thread replies or DMs) and when
// each was accepted.
type postCounter struct {
	n  atomic.Int64
	mu sync.Mutex
	at []time.Time
}

// note is the emulator's OnMessage.
func (c *postCounter) note(m slackemu.Message) {
	if m.Edited != 0 || m.ThreadTS != "" || !strings.HasPrefix(m.Channel, "C") {
		return
	}
	now := time.Now()
	c.mu.Lock()
	c.at = append(c.at, now)
	c.mu.Unlock()
	c.n.Add(1)
}

// between counts the posts accepted in [from, to).
func (c *postCounter) between(from, to time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.at {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

// last is when the latest post was accepted.
func (c *postCounter) last() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var t time.Time
	for _, at := range c.at {
		if at.After(t) {
			t = at
		}
	}
	return t
}

// countingEmulator is an emulator with n added channels whose posts c
// counts. The call log is bounded: these runs make thousands of calls and
// nothing reads them.
func countingEmulator(channels int, c *postCounter) *slackemu.Server {
	return slackemu.New(slackemu.Options{Workspace: benchWorkspace(channels), MaxCalls: 1000, OnMessage: c.note})
}

// startJobs starts the bot's job runner as production does (RunJobs with
// the configured workers and poll interval); stop cancels it and waits.
func (i *instance) startJobs() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = i.svc.RunJobs(ctx) })
	var once sync.Once
	return func() { once.Do(func() { cancel(); wg.Wait() }) }
}

// waitPosts waits until c has counted n posts, or giveUp has passed.
func waitPosts(c *postCounter, n int, giveUp time.Duration) error {
	deadline := time.Now().Add(giveUp)
	for c.n.Load() < int64(n) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d requests posted after %v", c.n.Load(), n, giveUp)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// waitQuiet waits until the job queue has nothing due and nothing in flight
// on two readings in a row (a job can schedule another as it acks), or
// giveUp has passed.
func (i *instance) waitQuiet(giveUp time.Duration) error {
	deadline := time.Now().Add(giveUp)
	for quiet := 0; quiet < 2; {
		d, err := i.store.Depth(context.Background())
		if err != nil {
			return fmt.Errorf("wait for the job queue: %w", err)
		}
		if d.Due == 0 && d.InFlight == 0 {
			quiet++
			continue
		}
		quiet = 0
		if time.Now().After(deadline) {
			return fmt.Errorf("job queue still busy after %v: %d due, %d in flight", giveUp, d.Due, d.InFlight)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// channelBody is seed 000's example posted to channel (extensions.slack.channel).
func (e *env) channelBody(channel string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(e.body, &doc); err != nil {
		return nil, fmt.Errorf("decode the example: %w", err)
	}
	ext, _ := doc["extensions"].(map[string]any)
	if ext == nil {
		ext = map[string]any{}
		doc["extensions"] = ext
	}
	sl, _ := ext["slack"].(map[string]any)
	if sl == nil {
		sl = map[string]any{}
		ext["slack"] = sl
	}
	sl["channel"] = channel
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode the example for %s: %w", channel, err)
	}
	return b, nil
}

// createAll sends n intake requests, body(i) each, over 8 connections, and
// fails unless every one is accepted.
func (e *env) createAll(url string, n int, body func(i int) []byte) error {
	c := newClient()
	defer c.CloseIdleConnections()
	var wg sync.WaitGroup
	var errs atomic.Int64
	var firstErr atomic.Value
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := post(c, url, body(i)); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if errs.Load() > 0 {
		return fmt.Errorf("%d of %d requests refused: %v", errs.Load(), n, firstErr.Load())
	}
	return nil
}
