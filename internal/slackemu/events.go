package slackemu

import (
	"context"
	"sync"
	"time"
)

// EventType identifies what changed in an Event.
type EventType string

// Event types delivered by Subscribe.
const (
	EventMessagePosted   EventType = "message_posted"
	EventMessageUpdated  EventType = "message_updated"
	EventMessageDeleted  EventType = "message_deleted"
	EventEphemeralPosted EventType = "ephemeral_posted"
	EventViewOpened      EventType = "view_opened" // views.open and views.push
	EventViewUpdated     EventType = "view_updated"
	EventViewPublished   EventType = "view_published"
	// EventAPICall is sent after every Web API call, successful or not,
	// once its state changes (if any) have been sent.
	EventAPICall EventType = "api_call"
	// EventReset is sent by Server.Reset.
	EventReset EventType = "reset"
)

// Event describes one change of the server's state. Exactly one of
// Message, Ephemeral, View and Call is set, depending on Type (none for
// EventReset). For EventMessageDeleted, Message is the message as it was.
type Event struct {
	// Seq increases by one with every event the server emits, so a gap
	// tells a subscriber that events were dropped.
	Seq       uint64     `json:"seq"`
	Type      EventType  `json:"type"`
	At        time.Time  `json:"at"`
	Message   *Message   `json:"message,omitempty"`
	Ephemeral *Ephemeral `json:"ephemeral,omitempty"`
	View      *View      `json:"view,omitempty"`
	Call      *Call      `json:"call,omitempty"`
}

// hub fans events out to subscribers. It is guarded by Server.mu.
type hub struct {
	seq  uint64
	next int
	subs map[int]chan Event
}

// publish sends ev to every subscriber without blocking: a subscriber
// whose buffer is full misses the event. It runs with s.mu held, which
// keeps events in order.
func (s *Server) publish(ev Event) {
	s.events.seq++
	ev.Seq = s.events.seq
	for _, ch := range s.events.subs {
		select {
		case ch <- ev:
		default: // slow subscriber: drop, it sees a gap in Seq
		}
	}
}

// Subscribe returns a channel delivering an Event for every state change
// from now on, and a function that cancels the subscription and closes the
// channel (safe to call more than once). Delivery never blocks the server:
// each subscription buffers Options.EventBuffer events (default 1024) and
// events that do not fit are dropped, which the subscriber can detect as a
// gap in Event.Seq.
func (s *Server) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, s.eventBuffer)
	s.mu.Lock()
	if s.events.subs == nil {
		s.events.subs = map[int]chan Event{}
	}
	id := s.events.next
	s.events.next++
	s.events.subs[id] = ch
	s.mu.Unlock()

	var once sync.Once
	return ch, func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.events.subs, id)
			close(ch)
		})
	}
}

// WaitFor blocks until cond reports true, re-evaluating it after every
// change of the server's state (every call, Reset, PostAsUser), and returns
// nil; or returns ctx.Err() when ctx ends first. It does not poll or sleep.
//
// cond runs with the server's lock held: it must only use its Snapshot
// argument (not the Server's methods) and must not retain it.
func (s *Server) WaitFor(ctx context.Context, cond func(sn *Snapshot) bool) error {
	check := func() (bool, <-chan struct{}) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return cond(&Snapshot{st: &s.st, dir: s.dir}), s.changed
	}
	for {
		done, changed := check()
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitForCalls waits until at least n calls of method were recorded
// (whatever their outcome) and returns all calls of method.
func (s *Server) WaitForCalls(ctx context.Context, method string, n int) ([]Call, error) {
	var calls []Call
	err := s.WaitFor(ctx, func(sn *Snapshot) bool {
		if sn.CountCalls(method) < n {
			return false
		}
		calls = sn.CallsTo(method)
		return true
	})
	return calls, err
}

// WaitForMessages waits until channel holds at least n messages (thread
// replies included) and returns them, oldest first.
func (s *Server) WaitForMessages(ctx context.Context, channel string, n int) ([]Message, error) {
	var msgs []Message
	err := s.WaitFor(ctx, func(sn *Snapshot) bool {
		msgs = sn.Messages(channel)
		return len(msgs) >= n
	})
	return msgs, err
}
