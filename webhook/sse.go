package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// The progress event streams (Server-Sent Events):
//
//	GET /v1/requests/{id}/events   one request's events, from its first; ends after its final event
//	GET /v1/events                 every event of the agent's requests, from now
//
// Both resume after the id of the last event received (Last-Event-ID, or
// ?last_event_id=): every later event is sent once, in order within a
// request. A request's stream ids are positions in its shard's stream
// ("<ms>-<seq>"); the agent's stream ids are cursors holding a position in
// each shard's stream (cursorPrefix...).

// cursorPrefix starts an agent stream's event id: "c1.<base>.<p0>.….<p15>",
// base36 numbers: base is the smallest millisecond of the positions, and
// each position is "<ms-base>[-<seq>]", or empty for the start of a stream.
const cursorPrefix = "c1."

// cursor is a position in every shard's stream.
type cursor []string

func startCursor() cursor {
	c := make(cursor, store.Shards)
	for i := range c {
		c[i] = "0-0"
	}
	return c
}

func (c cursor) String() string {
	var base int64 = -1
	for _, id := range c {
		if ms, _ := splitID(id); id != "0-0" && (base < 0 || ms < base) {
			base = ms
		}
	}
	base = max(base, 0)
	var b strings.Builder
	b.WriteString(cursorPrefix + strconv.FormatInt(base, 36))
	for _, id := range c {
		b.WriteByte('.')
		if id == "0-0" {
			continue
		}
		ms, seq := splitID(id)
		b.WriteString(strconv.FormatInt(ms-base, 36))
		if seq > 0 {
			b.WriteString("-" + strconv.FormatInt(seq, 36))
		}
	}
	return b.String()
}

func splitID(id string) (ms, seq int64) {
	a, b, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseInt(a, 10, 64)
	seq, _ = strconv.ParseInt(b, 10, 64)
	return ms, seq
}

func parseCursor(s string) (cursor, bool) {
	rest, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok {
		return nil, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != store.Shards+1 {
		return nil, false
	}
	base, err := strconv.ParseInt(parts[0], 36, 64)
	if err != nil || base < 0 {
		return nil, false
	}
	c := startCursor()
	for i, p := range parts[1:] {
		if p == "" {
			continue
		}
		a, b, hasSeq := strings.Cut(p, "-")
		d, err := strconv.ParseInt(a, 36, 64)
		if err != nil || d < 0 {
			return nil, false
		}
		var seq int64
		if hasSeq {
			if seq, err = strconv.ParseInt(b, 36, 64); err != nil || seq < 0 {
				return nil, false
			}
		}
		c[i] = strconv.FormatInt(base+d, 10) + "-" + strconv.FormatInt(seq, 10)
	}
	return c, true
}

// eventView is an event as a stream sends it (the data: line).
type eventView struct {
	ID        string          `json:"id"`
	RequestID string          `json:"request_id"`
	Agent     string          `json:"agent"`
	Type      string          `json:"type"`
	At        time.Time       `json:"at"`
	Data      json.RawMessage `json:"data"`
}

// eventStream is one open stream: whose events, from where.
type eventStream struct {
	agent   string
	request string // "" for every request of the agent
	shards  []int  // the shards it reads
	pos     cursor
	fresh   bool // no resume point: start at the streams' tails
	closed  bool // the request was closed already (request streams)
	// sinceMS (request streams) is when the request was received: older
	// events of its id are an earlier request's, deleted by retention.
	sinceMS int64
}

func (s *eventStream) id(e store.Event) string {
	if s.request != "" {
		return s.pos[e.Shard]
	}
	return s.pos.String()
}

func (s *eventStream) wants(e store.Event) bool {
	if s.request != "" {
		if ms, _ := splitID(e.ID); e.RequestID != s.request || ms < s.sinceMS {
			return false
		}
	}
	return e.Agent == s.agent
}

// lastEventID is the resume point a client sent.
func lastEventID(r *http.Request) string {
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		return v
	}
	return r.URL.Query().Get("last_event_id")
}

func badEventID(w http.ResponseWriter, r *http.Request, want string) {
	writeError(w, r, http.StatusBadRequest, "invalid Last-Event-ID (or last_event_id): want "+want+
		", the id of the last event received on this stream")
}

// requestEvents is GET /v1/requests/{id}/events.
func (a *API) requestEvents(w http.ResponseWriter, r *http.Request, agent string) {
	if !a.eventsEnabled(w, r) {
		return
	}
	id := r.PathValue("id")
	rec, err := a.getBounded(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && rec.Agent != agent:
		// Another agent's request is not said to exist.
		writeError(w, r, http.StatusNotFound, notFound(id))
		return
	case err != nil:
		a.failed(w, r, "get request", err)
		return
	}
	s := &eventStream{agent: agent, request: id, shards: []int{store.ShardOf(id)}, pos: startCursor(), closed: !rec.Status.Open(),
		sinceMS: rec.ReceivedAt.UnixMilli()}
	if v := lastEventID(r); v != "" {
		if c, ok := parseCursor(v); ok {
			s.pos[s.shards[0]] = c[s.shards[0]]
		} else if store.ValidEventID(v) {
			s.pos[s.shards[0]] = v
		} else {
			badEventID(w, r, `"<ms>-<seq>"`)
			return
		}
	}
	a.serveEvents(w, r, s)
}

// agentEvents is GET /v1/events.
func (a *API) agentEvents(w http.ResponseWriter, r *http.Request, agent string) {
	if !a.eventsEnabled(w, r) {
		return
	}
	s := &eventStream{agent: agent, pos: startCursor(), fresh: true}
	for i := range store.Shards {
		s.shards = append(s.shards, i)
	}
	if v := lastEventID(r); v != "" {
		c, ok := parseCursor(v)
		if !ok {
			badEventID(w, r, `a cursor "`+cursorPrefix+`…"`)
			return
		}
		s.pos, s.fresh = c, false
	}
	a.serveEvents(w, r, s)
}

func (a *API) eventsEnabled(w http.ResponseWriter, r *http.Request) bool {
	if a.opts.Events == nil {
		writeError(w, r, http.StatusNotFound, "event streams are not enabled on this server")
		return false
	}
	return true
}

// serveEvents subscribes s to the hub, sends what it missed from Redis,
// then what the hub delivers, until the client leaves, the server shuts
// down, or (a request's stream) the request's final event is sent.
func (a *API) serveEvents(w http.ResponseWriter, r *http.Request, s *eventStream) {
	hub := a.opts.Events
	ctx, cancel := context.WithTimeout(r.Context(), a.opts.StoreTimeout)
	sub, err := hub.subscribe(ctx, s.agent, s.request)
	cancel()
	if err != nil {
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
		msg := "the server is shutting down; reconnect with Last-Event-ID"
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			msg = "the event streams cannot be read yet: the store (Redis) did not answer in time; retry after Retry-After"
		case errors.Is(err, ErrTooManyStreams):
			msg = fmt.Sprintf("too many open event streams on this server (EVENTS_MAX_STREAMS=%d); retry after Retry-After", hub.opts.MaxStreams)
		}
		writeError(w, r, http.StatusServiceUnavailable, msg)
		return
	}
	defer func() { hub.unsubscribe(sub) }()
	if s.fresh {
		ctx, cancel := context.WithTimeout(r.Context(), a.opts.StoreTimeout)
		tails, err := hub.src.EventTails(ctx)
		cancel()
		if err != nil {
			a.failed(w, r, "read event streams", err)
			return
		}
		s.pos = tails
	}
	rc := http.NewResponseController(w)
	send := func(frame string) error {
		_ = rc.SetWriteDeadline(time.Now().Add(2*hub.opts.Heartbeat + 10*time.Second))
		if _, err := io.WriteString(w, frame); err != nil {
			return err
		}
		return rc.Flush()
	}
	// final reports whether e ended a request's stream.
	emit := func(e store.Event) (final bool, err error) {
		s.pos[e.Shard] = e.ID
		if !s.wants(e) {
			return false, nil
		}
		data, _ := json.Marshal(eventView{ID: s.id(e), RequestID: e.RequestID, Agent: e.Agent, Type: e.Type, At: e.At, Data: e.Data})
		if err := send("id: " + s.id(e) + "\nevent: " + e.Type + "\ndata: " + string(data) + "\n\n"); err != nil {
			return false, err
		}
		return s.request != "" && e.Final(), nil
	}
	catchUp := func() (bool, error) {
		for _, shard := range s.shards {
			for {
				ctx, cancel := context.WithTimeout(r.Context(), a.opts.StoreTimeout)
				evs, err := hub.src.EventsAfter(ctx, shard, s.pos[shard], 500)
				cancel()
				if err != nil {
					return false, err
				}
				for _, e := range evs {
					if final, err := emit(e); final || err != nil {
						return final, err
					}
				}
				if len(evs) < 500 {
					break
				}
			}
		}
		return false, nil
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	if send("retry: 2000\n\n") != nil {
		return
	}
	if final, err := catchUp(); final || err != nil || s.closed {
		if err != nil && r.Context().Err() == nil {
			a.log.WarnContext(r.Context(), "events: catch up", "agent", s.agent, "err", err)
		}
		return
	}
	beat := time.NewTicker(hub.opts.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case e := <-sub.ch:
			if store.CompareEventIDs(e.ID, s.pos[e.Shard]) <= 0 {
				continue // read from Redis already
			}
			if final, err := emit(e); final || err != nil {
				return
			}
		case <-sub.lagged:
			// The hub dropped this slow stream: register again, then read
			// what it missed from Redis.
			next, err := hub.subscribe(r.Context(), s.agent, s.request)
			if err != nil {
				return
			}
			sub = next
			if final, err := catchUp(); final || err != nil {
				return
			}
		case <-beat.C:
			if send(": ping\n\n") != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-hub.Done():
			return
		}
	}
}
