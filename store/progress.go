package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Progress event types: what an agent watching a request is told (GET
// /v1/events, GET /v1/requests/{id}/events).
const (
	EventInputRequested = "input:requested" // the request was created
	EventInputReceived  = "input:received"  // a decision was answered (each answer)
	EventEscalated      = "escalated"
	EventReminded       = "reminded"
	// The final events carry the response (resolved, expired) or when
	// the agent withdrew the request.
	EventResolved  = "resolved"
	EventExpired   = "expired"
	EventWithdrawn = "withdrawn"
)

// DefaultEventsRetention is how long progress events are kept unless
// Options.EventsRetention says otherwise.
const DefaultEventsRetention = 24 * time.Hour

// MaxInlineEventBytes bounds the document or response an event carries
// inline; a larger one is left out and the event links to the request
// (GET /v1/requests/{id} has it).
const MaxInlineEventBytes = 64 << 10

// Event is one progress event of a request. Events are written to their
// request's shard stream (<p>:{sNN}:events) in the same transaction as the
// change they describe, so a change and its events are applied together
// or not at all.
type Event struct {
	// ID is the entry id in its shard's stream ("<ms>-<seq>"): ids grow
	// within a shard, so (Shard, ID) is a position to resume from.
	ID        string          `json:"-"`
	Shard     int             `json:"-"`
	RequestID string          `json:"request_id"`
	Agent     string          `json:"agent"`
	Type      string          `json:"type"`
	At        time.Time       `json:"at"`
	Data      json.RawMessage `json:"data"`
}

// Final reports whether the event closes its request.
func (e Event) Final() bool {
	return e.Type == EventResolved || e.Type == EventExpired || e.Type == EventWithdrawn
}

// ShardOf is the shard (0..Shards-1) whose stream holds a request's events.
func ShardOf(requestID string) int { return shardOf(requestID) }

// pendingEvent is an event to write, before its stream id is known.
type pendingEvent struct {
	typ  string
	data map[string]any
}

// changeEvents are the progress events of ch applied to rec: one
// input:received per answered audit entry, escalated and reminded as
// audited, and the final event when ch closes the request.
func changeEvents(rec Record, ch *Change) []pendingEvent {
	var out []pendingEvent
	for _, a := range ch.Audit {
		switch a.Event {
		case "answered":
			d := map[string]any{"actor": a.Actor}
			for k, v := range a.Data {
				d[k] = v
			}
			if id, _ := a.Data["decision_id"].(string); id != "" {
				for _, ans := range ch.Answers {
					if ans.DecisionID == id {
						d["answer"] = ans
					}
				}
			}
			out = append(out, pendingEvent{EventInputReceived, d})
		case "escalated", "reminded":
			d := map[string]any{}
			for k, v := range a.Data {
				d[k] = v
			}
			out = append(out, pendingEvent{a.Event, d})
		}
	}
	if ch.Status != "" && !ch.Status.Open() && rec.Status.Open() {
		d := map[string]any{"status": string(ch.Status)}
		if r := ch.Resolution; r != nil {
			inline(d, "response", r.Response, rec.ID)
			if r.By.ID != "" {
				d["resolved_by"] = r.By
			}
		}
		if !ch.WithdrawnAt.IsZero() {
			d["withdrawn_at"] = ch.WithdrawnAt.UTC().Truncate(time.Millisecond) // as stored
		}
		out = append(out, pendingEvent{string(ch.Status), d})
	}
	return out
}

// inline puts doc into d under name when it is small enough, else a link
// to the request that holds it.
func inline(d map[string]any, name string, doc []byte, id string) {
	if inlinable(doc) {
		d[name] = json.RawMessage(doc)
		return
	}
	d[name+"_link"] = "/v1/requests/" + id
}

// inlinable reports whether an event carries doc inline.
func inlinable(doc []byte) bool {
	return len(doc) > 0 && len(doc) <= MaxInlineEventBytes && json.Valid(doc)
}

// createEvents is input:requested for a new request. The document it
// carries is not copied into the stream: the request hash holds it, and
// EventsAfter fills it in as it reads the event (eventdoc.go), or links to
// it there when it is not valid JSON (inline). Only a document too large
// to carry inline is linked here, by its size alone: checking it is JSON
// here too cost intake a scan of every document, for an answer the read
// gives anyway.
func createEvents(n NewRequest) []pendingEvent {
	d := map[string]any{"channel": n.Channel}
	if len(n.Document) > MaxInlineEventBytes {
		d["request_link"] = "/v1/requests/" + n.ID
	}
	return []pendingEvent{{EventInputRequested, d}}
}

// queueEvents records evs for the request's shard stream: the write's
// script gives them ids "<ms>-<seq>" of the store's clock that follow the
// stream's newest (never going back, so replicas writing one shard cannot
// reorder it) and trims the entries older than the retention
// (cmdEvents). cursor, when set, is the request hash field that receives
// the stream's newest id before these events (a new request's event
// subscription starts there).
func (s *Store) queueEvents(ctx context.Context, p redis.Pipeliner, rec Record, now time.Time, evs []pendingEvent, cursor string) {
	if len(evs) == 0 {
		return
	}
	minID := strconv.FormatInt(now.Add(-s.eventsRetention).UnixMilli(), 10)
	at := strconv.FormatInt(now.UnixMilli(), 10)
	args := make([]any, 0, 6+5*len(evs))
	args = append(args, cmdEvents, s.keys.events(shardOf(rec.ID)), at, minID, s.keys.request(rec.ID), cursor)
	for _, e := range evs {
		args = append(args, rec.ID, rec.Agent, e.typ, at, mustJSON(e.data))
	}
	p.Do(ctx, args...)
	s.queueEventsJob(ctx, p, rec, now, evs)
}

// parseStreamID splits "<ms>-<seq>"; anything else is 0-0.
func parseStreamID(id string) (ms, seq int64) {
	a, b, ok := strings.Cut(id, "-")
	if !ok {
		return 0, 0
	}
	ms, err1 := strconv.ParseInt(a, 10, 64)
	seq, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || ms < 0 || seq < 0 {
		return 0, 0
	}
	return ms, seq
}

func formatStreamID(ms, seq int64) string {
	return strconv.FormatInt(ms, 10) + "-" + strconv.FormatInt(seq, 10)
}

// ValidEventID reports whether id is a stream position ("<ms>-<seq>").
func ValidEventID(id string) bool {
	ms, seq := parseStreamID(id)
	return id == "0-0" || (ms > 0 || seq > 0) && formatStreamID(ms, seq) == id
}

// CompareEventIDs orders two stream positions (-1, 0, 1).
func CompareEventIDs(a, b string) int {
	am, as := parseStreamID(a)
	bm, bs := parseStreamID(b)
	switch {
	case am != bm:
		return cmpInt(am, bm)
	default:
		return cmpInt(as, bs)
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// EventsAfter reads up to count events of a shard's stream that follow
// position after ("0-0": from the oldest kept), oldest first.
func (s *Store) EventsAfter(ctx context.Context, shard int, after string, count int64) ([]Event, error) {
	if shard < 0 || shard >= Shards {
		return nil, fmt.Errorf("store: no shard %d", shard)
	}
	ms, seq := parseStreamID(after)
	start := formatStreamID(ms, seq+1) // exclusive of after, on any Redis
	msgs, err := s.rdb.XRangeN(ctx, s.keys.events(shard), start, "+", count).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: read events of shard %d: %w", shard, err)
	}
	out := make([]Event, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, decodeEvent(shard, m))
	}
	if err := s.fillRequested(ctx, out); err != nil {
		return nil, fmt.Errorf("store: read events of shard %d: %w", shard, err)
	}
	return out, nil
}

func decodeEvent(shard int, m redis.XMessage) Event {
	str := func(k string) string { v, _ := m.Values[k].(string); return v }
	at, _ := strconv.ParseInt(str("at"), 10, 64)
	data := json.RawMessage(str("data"))
	if !json.Valid(data) {
		data = json.RawMessage("{}")
	}
	return Event{ID: m.ID, Shard: shard, RequestID: str("request_id"), Agent: str("agent"), Type: str("type"),
		At: time.UnixMilli(at).UTC(), Data: data}
}

// EventTails returns the newest position of each shard's stream ("0-0"
// for an empty one): reading after them gives only events written later.
func (s *Store) EventTails(ctx context.Context) ([]string, error) {
	cmds := make([]*redis.XMessageSliceCmd, Shards)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for shard := range Shards {
			cmds[shard] = p.XRevRangeN(ctx, s.keys.events(shard), "+", "-", 1)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: read event stream tails: %w", err)
	}
	out := make([]string, Shards)
	for i, c := range cmds {
		out[i] = "0-0"
		if msgs := c.Val(); len(msgs) > 0 {
			out[i] = msgs[0].ID
		}
	}
	return out, nil
}
