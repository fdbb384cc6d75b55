package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/redis/go-redis/v9"
)

// JobEvents POSTs a request's progress events to its extensions.events
// callback, in order, one event per attempt ("evdeliver:<id>"). It is
// scheduled (ZADD NX: a retry's later due time stands) in the transaction
// that writes an event the subscription wants, so no event is written
// without a job that delivers it.
const JobEvents = "evdeliver"

// Event callback states (Record.Events.State).
const (
	EventsActive   = ""         // delivering, or waiting for the next event
	EventsRetrying = "retrying" // an attempt at the event after Cursor failed; another is scheduled
	EventsGone     = "gone"     // the agent answered 410 Gone: unsubscribed
	EventsDead     = "dead"     // an event's attempts ran out: stopped, in the dead-letter list
)

// EventsState is a request's event callback (extensions.events) and how far
// its delivery got. Fields of the request hash: events_url, events_types
// (JSON list; absent: every type), events_cursor (the stream id of the last
// event settled: delivered, or skipped as not subscribed), events_state,
// events_attempts (failed attempts at events_failing, the event being
// retried), events_error, events_next_ms.
type EventsState struct {
	URL    string
	Types  []string
	Cursor string
	State  string
	// Attempts counts the failed attempts at event Failing.
	Attempts      int
	Failing       string
	LastError     string
	NextAttemptAt time.Time
}

// Subscribed reports whether events are still POSTed (a subscription that
// is neither gone nor dead).
func (e EventsState) Subscribed() bool {
	return e.URL != "" && (e.State == EventsActive || e.State == EventsRetrying)
}

// Wants reports whether the subscription covers events of type t.
func (e EventsState) Wants(t string) bool {
	return aah.EventSubscription{URL: e.URL, Types: e.Types}.Wants(t)
}

func decodeEventsState(h map[string]string) EventsState {
	num := func(f string) int64 { n, _ := strconv.ParseInt(h[f], 10, 64); return n }
	return EventsState{
		URL: h["events_url"], Types: decodeTimers(h["events_types"]), Cursor: h["events_cursor"],
		State: h["events_state"], Attempts: int(num("events_attempts")), Failing: h["events_failing"], LastError: h["events_error"],
		NextAttemptAt: fromMs(num("events_next_ms")),
	}
}

// createEventsFields are the request hash fields of a new request's
// subscription; its cursor (events_cursor) is written by the create's
// script: the shard stream's tail before the request's first event
// (eventsCursorField).
func createEventsFields(sub *aah.EventSubscription, fields []any) []any {
	if sub == nil || sub.URL == "" {
		return fields
	}
	fields = append(fields, "events_url", sub.URL)
	if len(sub.Types) > 0 {
		fields = append(fields, "events_types", jsonStrings(sub.Types))
	}
	return fields
}

// eventsCursorField is the field that receives a new request's event
// cursor, "" when it subscribes to nothing.
func eventsCursorField(n NewRequest) string {
	if n.Events == nil || n.Events.URL == "" {
		return ""
	}
	return "events_cursor"
}

// queueEventsJob schedules rec's event callback job when evs hold an event
// its subscription wants.
func (s *Store) queueEventsJob(ctx context.Context, p redis.Pipeliner, rec Record, now time.Time, evs []pendingEvent) {
	if !rec.Events.Subscribed() || !slices.ContainsFunc(evs, func(e pendingEvent) bool { return rec.Events.Wants(e.typ) }) {
		return
	}
	p.ZAddNX(ctx, s.keys.jobs(shardOf(rec.ID)).due, redis.Z{Score: float64(now.UnixMilli()), Member: jobID(JobEvents, rec.ID)})
}

// NextEvent returns the first event of request rec after its cursor that
// its subscription wants. found is false when none follows. skipped is
// where the cursor may move to without delivering anything (the last of
// the request's own events the subscription does not want, or, when the
// read stopped at its page limit, the last event read), or "". It reads
// the request's shard stream from the cursor, page by page.
func (s *Store) NextEvent(ctx context.Context, rec Record) (ev Event, skipped string, found bool, err error) {
	shard := shardOf(rec.ID)
	after := rec.Events.Cursor
	for range 50 { // at most 50 pages of 200 a call; the next call goes on from skipped
		evs, err := s.EventsAfter(ctx, shard, after, 200)
		if err != nil {
			return Event{}, skipped, false, err
		}
		for _, e := range evs {
			// An event of a request that had this id before (deleted by
			// retention) is older than this one: not ours.
			if e.RequestID == rec.ID && !e.At.Before(rec.ReceivedAt) {
				if rec.Events.Wants(e.Type) {
					return e, skipped, true, nil
				}
				skipped = e.ID
			}
			after = e.ID
		}
		if len(evs) < 200 {
			return Event{}, skipped, false, nil
		}
	}
	return Event{}, after, false, nil
}

// EventAttempt is one POST of an event to a request's callback.
type EventAttempt struct {
	// From is the cursor the attempt was made at: the record is written
	// only while it is still the request's (a stale worker changes nothing).
	From    string
	EventID string // the event POSTed
	At      time.Time
	Status  int
	Error   string
	// Attempt counts the attempts at this event, this one included.
	Attempt int
	// NextAttemptAt is when the event is tried again (state EventsRetrying).
	NextAttemptAt *time.Time
}

// ErrStaleCursor means the request's event cursor moved since the attempt
// began (another worker settled the event): nothing was recorded.
var ErrStaleCursor = errors.New("store: the event cursor moved")

// RecordEventAttempt stores the outcome of an attempt at a request's next
// event: EventsActive (2xx: the cursor moves to the event; more schedules
// the job again now for the events after it), EventsRetrying (the job
// again at NextAttemptAt), EventsGone or EventsDead (no more jobs; dead
// goes to the dead-letter list). The job and the state are written in one
// transaction. A skip (no event, only not-wanted ones to move past) is an
// EventsActive attempt with EventID the last skipped.
func (s *Store) RecordEventAttempt(ctx context.Context, id string, a EventAttempt, state string, more bool) error {
	if state == EventsRetrying && a.NextAttemptAt == nil {
		return fmt.Errorf("store: record event delivery of %s: a retrying attempt needs NextAttemptAt", id)
	}
	_, err := s.Update(ctx, id, func(rec Record) (*Change, error) {
		if rec.Events.Cursor != a.From || !rec.Events.Subscribed() {
			return nil, ErrStaleCursor
		}
		ch := &Change{Quiet: true, set: map[string]any{}}
		job := jobID(JobEvents, id)
		switch state {
		case EventsActive:
			ch.set["events_cursor"] = a.EventID
			ch.del = []string{"events_state", "events_attempts", "events_failing", "events_error", "events_next_ms"}
			if more {
				ch.Jobs = []JobAt{{ID: job, At: s.now()}}
			}
		case EventsRetrying:
			ch.set["events_state"], ch.set["events_attempts"], ch.set["events_error"] = state, a.Attempt, a.Error
			ch.set["events_failing"] = a.EventID
			ch.set["events_next_ms"] = a.NextAttemptAt.UnixMilli()
			ch.Jobs = []JobAt{{ID: job, At: *a.NextAttemptAt}}
		case EventsGone, EventsDead:
			ch.set["events_state"], ch.set["events_attempts"], ch.set["events_error"] = state, a.Attempt, a.Error
			ch.del = []string{"events_next_ms"}
			ch.Audit = []AuditEvent{{Event: "events_" + state, Actor: "system",
				Data: map[string]any{"event_id": a.EventID, "attempt": a.Attempt, "status": a.Status, "error": a.Error}}}
			if state == EventsDead {
				ch.push = []listPush{{Key: s.keys.jobs(shardOf(id)).dead, Cap: int64(s.deadCap),
					Value: mustJSON(DeadJob{ID: job, Attempts: a.Attempt, Error: a.Error, DiedAt: a.At.UTC()})}}
			}
		default:
			return nil, fmt.Errorf("store: record event delivery of %s: unknown state %q", id, state)
		}
		return ch, nil
	})
	return err
}
