package webhook

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// MaxWait is the longest long poll: GET /v1/requests/{id}?wait=60s.
const MaxWait = 60 * time.Second

// Waiters wakes long polls when their request changes. One Waiters per
// process consumes one change feed (store.SubscribeChanges: a single Redis
// subscription) and wakes only the waiters of the request that changed, so
// a thousand agents long-polling cost one subscription, not a thousand
// pollers.
type Waiters struct {
	mu     sync.Mutex
	byID   map[string]map[chan struct{}]struct{}
	n      int
	closed bool
	done   chan struct{}
}

// NewWaiters starts a hub over changes, the ids of requests that changed.
// When changes is closed (its subscription's context ended: shutdown), every
// waiter is released and later waits answer at once.
func NewWaiters(changes <-chan string) *Waiters {
	w := &Waiters{byID: map[string]map[chan struct{}]struct{}{}, done: make(chan struct{})}
	go w.run(changes)
	return w
}

func (w *Waiters) run(changes <-chan string) {
	defer close(w.done)
	for id := range changes {
		w.mu.Lock()
		for ch := range w.byID[id] {
			close(ch)
		}
		w.n -= len(w.byID[id])
		delete(w.byID, id)
		w.mu.Unlock()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for _, set := range w.byID {
		for ch := range set {
			close(ch)
		}
	}
	w.byID, w.n = map[string]map[chan struct{}]struct{}{}, 0
}

// Len is the number of registered waiters.
func (w *Waiters) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// Done is closed once the change feed has ended.
func (w *Waiters) Done() <-chan struct{} { return w.done }

// register returns a channel closed at the next change of id, and a func to
// give it up. ok is false once the hub has stopped.
func (w *Waiters) register(id string) (woken <-chan struct{}, cancel func(), ok bool) {
	ch := make(chan struct{})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, func() {}, false
	}
	set := w.byID[id]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		w.byID[id] = set
	}
	set[ch] = struct{}{}
	w.n++
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if set, ok := w.byID[id]; ok {
			if _, ok := set[ch]; ok {
				delete(set, ch)
				w.n--
				if len(set) == 0 {
					delete(w.byID, id)
				}
			}
		}
	}, true
}

// awaitUntil waits up to wait for request id to be done (to leave the open
// states, or to change: see longPoll) and returns its state then. It
// registers before each read, so a change that lands between the read and
// the wait still wakes it (no lost wake-up).
func (a *API) awaitUntil(w http.ResponseWriter, r *http.Request, id string, wait time.Duration, done func(store.Record) bool) (store.Record, error) {
	ctx := r.Context()
	// The server's WriteTimeout may be shorter than a long poll.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(wait + 15*time.Second))
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		woken, cancel, ok := a.opts.Waiters.register(id)
		rec, err := a.getBounded(ctx, id)
		if err != nil || done(rec) || !ok {
			cancel()
			return rec, err
		}
		select {
		case <-woken:
			cancel()
			continue
		case <-timer.C:
			cancel()
			return a.getBounded(ctx, id)
		case <-ctx.Done():
			cancel()
			return store.Record{}, ctx.Err()
		}
	}
}

// getBounded reads a request under a deadline of StoreTimeout.
func (a *API) getBounded(ctx context.Context, id string) (store.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.StoreTimeout)
	defer cancel()
	return a.opts.Store.Get(ctx, id)
}

// parseWait reads the wait query parameter: a duration ("30s", "1m") or
// whole seconds ("30"), at most MaxWait. It answers 400 itself when invalid.
func parseWait(w http.ResponseWriter, r *http.Request) (time.Duration, bool) {
	s := r.URL.Query().Get("wait")
	if s == "" {
		return 0, true
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		var secs int64
		if secs, err = strconv.ParseInt(s, 10, 64); err == nil && secs <= int64(MaxWait/time.Second) {
			d = time.Duration(secs) * time.Second
		} else if err == nil {
			err = errors.New("too long")
		}
	}
	if err != nil || d < 0 || d > MaxWait {
		writeError(w, r, http.StatusBadRequest, "invalid query", aah.FieldError{Field: "wait",
			Message: "must be a duration from 0s to 60s, e.g. 30s"})
		return 0, false
	}
	return d, true
}
