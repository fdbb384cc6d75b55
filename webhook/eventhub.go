package webhook

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// EventSource reads the shards' progress event streams; *store.Store
// implements it.
type EventSource interface {
	EventsAfter(ctx context.Context, shard int, after string, count int64) ([]store.Event, error)
	EventTails(ctx context.Context) ([]string, error)
}

// DefaultMaxStreams caps the event streams one process serves at once
// unless EventHubOptions say otherwise.
const DefaultMaxStreams = 1000

// ErrTooManyStreams is subscribe's error at the cap (503 to the client).
var ErrTooManyStreams = errors.New("webhook: too many open event streams")

// errHubClosed is subscribe's error once the hub stopped (shutdown).
var errHubClosed = errors.New("webhook: event streams are shutting down")

// EventHubOptions configure an EventHub.
type EventHubOptions struct {
	// MaxStreams caps the open streams; default DefaultMaxStreams.
	MaxStreams int
	// Poll is how often every shard is read even without a wake-up (a
	// lost pub/sub message) while streams are open; default 1s.
	Poll time.Duration
	// Heartbeat is how often an idle stream sends a comment; default 15s.
	Heartbeat time.Duration
	// Buffer is each stream's mailbox; a stream that falls further behind
	// is dropped by the hub and reads what it missed from Redis. Default
	// 256.
	Buffer int
	// Creations, when set, is the change feed's switch for creations
	// (store.ChangeFeed): the hub follows them while streams are open, so
	// that an idle process is not told of every create. Nil: the change
	// feed carries creations already, or the hub finds them at its Poll.
	Creations CreationFollower
	Logger    *slog.Logger
}

// CreationFollower turns on or off a change feed's delivery of the ids of
// requests created (store.ChangeFeed.FollowCreations).
type CreationFollower interface {
	FollowCreations(ctx context.Context, on bool) error
}

// EventHub is one process's reader of the event streams. It reads each
// shard's stream after the position it reached, when the change feed says
// a request of that shard changed (or every Poll), and fans the events out
// to the streams open on this process: a thousand clients cost no Redis
// connection of their own. Each stream reads what it missed (its resume
// point up to now) from Redis itself and drops what it already sent, so
// what it sends is exact whatever the hub's timing.
//
// While no stream is open the hub reads nothing (it only drains the change
// feed) and forgets its positions; the first stream to open wakes it, and
// it reads the shards' tails again before that stream is let through, so
// every event after them is fanned out to it.
type EventHub struct {
	src  EventSource
	opts EventHubOptions
	log  *slog.Logger

	mu     sync.Mutex
	byAgt  map[string]map[*eventSub]struct{}
	n      int
	closed bool
	done   chan struct{}
	// active is whether the hub knows where each shard's stream is and
	// reads on: only while streams are registered. seeded is closed once
	// it is (a new channel each time the hub goes idle): a stream waits
	// for it after registering, so every event after what it read itself
	// reaches it.
	active bool
	seeded chan struct{}
	// kick wakes the idle hub when a stream registers.
	kick chan struct{}
}

// eventSub is one open stream's mailbox. lagged is closed when the hub had
// to drop it (its mailbox was full): the stream then reads from Redis.
type eventSub struct {
	agent, request string
	ch             chan store.Event
	lagged         chan struct{}
}

// NewEventHub starts a hub over changes (the ids of requests that changed
// or were created: store.SubscribeChanges). It stops, ending every stream,
// when ctx ends or changes is closed.
func NewEventHub(ctx context.Context, src EventSource, changes <-chan string, opts EventHubOptions) *EventHub {
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 15 * time.Second
	}
	if opts.Buffer <= 0 {
		opts.Buffer = 256
	}
	h := &EventHub{src: src, opts: opts, log: opts.Logger, byAgt: map[string]map[*eventSub]struct{}{},
		done: make(chan struct{}), seeded: make(chan struct{}), kick: make(chan struct{}, 1)}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	go h.run(ctx, changes)
	return h
}

// Done is closed once the hub stopped.
func (h *EventHub) Done() <-chan struct{} { return h.done }

// Len is the number of open streams.
func (h *EventHub) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

func (h *EventHub) run(ctx context.Context, changes <-chan string) {
	defer h.stop()
	var pos []string
	tick := time.NewTicker(h.opts.Poll)
	defer tick.Stop()
	dirty := make([]bool, store.Shards)
	following := false // creations, while streams are open (opts.Creations)
	for {
		select {
		case <-ctx.Done():
			return
		case id, ok := <-changes:
			if !ok {
				return
			}
			dirty[store.ShardOf(id)] = true
		drain:
			for { // a burst of changes: one read per shard
				select {
				case id, ok := <-changes:
					if !ok {
						return
					}
					dirty[store.ShardOf(id)] = true
				default:
					break drain
				}
			}
		case <-tick.C:
			for i := range dirty {
				dirty[i] = true
			}
		case <-h.kick:
		}
		switch h.engage() {
		case hubIdle:
			clear(dirty)
			if following {
				// Off even when it failed: go-redis forgets the channel
				// before it sends the UNSUBSCRIBE, so a reconnection
				// would not follow it again, and the next stream must
				// turn it on afresh.
				h.followCreations(ctx, false)
				following = false
			}
			continue
		case hubUnseeded:
			// Creations are followed before the tails are read, so a
			// creation after them wakes the hub (once Redis has taken the
			// subscription, moments after it is sent: one in between, or
			// while following fails, is read at the next Poll). A failure
			// does not hold the streams back: it is tried again at every
			// wake-up.
			following = h.followUnlessFollowing(ctx, following)
			tails, ok := h.tails(ctx)
			if !ok {
				continue // again at the next tick (or change, or stream)
			}
			// Every event so far is at or before the tails: the streams
			// waiting read those themselves.
			pos = tails
			clear(dirty)
			h.mu.Lock()
			h.active = true
			close(h.seeded)
			h.mu.Unlock()
			continue
		}
		following = h.followUnlessFollowing(ctx, following)
		for shard, d := range dirty {
			if d {
				dirty[shard] = !h.readShard(ctx, shard, &pos[shard])
			}
		}
	}
}

type hubState int

const (
	hubIdle     hubState = iota // no stream: read nothing
	hubUnseeded                 // streams wait for the tails
	hubActive                   // read on from the positions
)

// engage is what the hub does at a wake-up: with no stream registered it
// goes idle (the next stream waits for fresh tails).
func (h *EventHub) engage() hubState {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.n == 0:
		if h.active {
			h.active = false
			h.seeded = make(chan struct{})
		}
		return hubIdle
	case !h.active:
		return hubUnseeded
	}
	return hubActive
}

// followUnlessFollowing turns the change feed's creations on unless they
// are followed already (or there is no switch); it reports whether they are
// followed then.
func (h *EventHub) followUnlessFollowing(ctx context.Context, following bool) bool {
	if following || h.opts.Creations == nil {
		return following
	}
	return h.followCreations(ctx, true)
}

// followCreations turns the change feed's creations on or off; false when
// it failed.
func (h *EventHub) followCreations(ctx context.Context, on bool) bool {
	if err := h.opts.Creations.FollowCreations(ctx, on); err != nil {
		if ctx.Err() == nil {
			h.log.WarnContext(ctx, "events: follow creations", "on", on, "err", err)
		}
		return false
	}
	return true
}

// tails reads where each shard's stream ends; false when Redis failed.
func (h *EventHub) tails(ctx context.Context) ([]string, bool) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	tails, err := h.src.EventTails(rctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			h.log.WarnContext(ctx, "events: read stream tails", "err", err)
		}
		return nil, false
	}
	return tails, true
}

// readShard fans out the shard's events after *pos; false when Redis
// failed (the shard is read again at the next wake-up or tick).
func (h *EventHub) readShard(ctx context.Context, shard int, pos *string) bool {
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		evs, err := h.src.EventsAfter(rctx, shard, *pos, 500)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				h.log.WarnContext(ctx, "events: read shard", "shard", shard, "err", err)
			}
			return false
		}
		for _, e := range evs {
			h.fanOut(e)
			*pos = e.ID
		}
		if len(evs) < 500 {
			return true
		}
	}
}

func (h *EventHub) fanOut(e store.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.byAgt[e.Agent] {
		if sub.request != "" && sub.request != e.RequestID {
			continue
		}
		select {
		case sub.ch <- e:
		default: // full: the stream catches up from Redis instead
			h.dropLocked(sub)
			close(sub.lagged)
		}
	}
}

// subscribe registers a stream for agent's events (of one request when
// request is not ""), and returns once the hub knows where each shard's
// stream is (or ctx ends). Register before reading what was missed: then
// every event is either read or delivered, or both (and deduplicated).
func (h *EventHub) subscribe(ctx context.Context, agent, request string) (*eventSub, error) {
	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		return nil, errHubClosed
	case h.n >= h.opts.MaxStreams:
		h.mu.Unlock()
		return nil, ErrTooManyStreams
	}
	sub := &eventSub{agent: agent, request: request, ch: make(chan store.Event, h.opts.Buffer), lagged: make(chan struct{})}
	set := h.byAgt[agent]
	if set == nil {
		set = map[*eventSub]struct{}{}
		h.byAgt[agent] = set
	}
	set[sub] = struct{}{}
	h.n++
	seeded := h.seeded
	if !h.active {
		select {
		case h.kick <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
	h.mu.Unlock()
	select {
	case <-seeded:
		return sub, nil
	case <-h.done:
		return nil, errHubClosed
	case <-ctx.Done():
		h.unsubscribe(sub)
		return nil, ctx.Err()
	}
}

// unsubscribe gives a stream's registration up (once dropped, a no-op).
func (h *EventHub) unsubscribe(sub *eventSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropLocked(sub)
}

func (h *EventHub) dropLocked(sub *eventSub) {
	if set, ok := h.byAgt[sub.agent]; ok {
		if _, ok := set[sub]; ok {
			delete(set, sub)
			h.n--
			if len(set) == 0 {
				delete(h.byAgt, sub.agent)
			}
		}
	}
}

func (h *EventHub) stop() {
	h.mu.Lock()
	h.closed = true
	h.byAgt, h.n = map[string]map[*eventSub]struct{}{}, 0
	h.mu.Unlock()
	close(h.done)
}
