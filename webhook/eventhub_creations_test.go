package webhook_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/webhook"
)

// A request created while a stream is open reaches it as it is created:
// the hub follows creations then (its Poll here never comes).
func TestEventHubHearsCreationsWhileStreamsAreOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, hub, _ := e.eventsAPI(webhook.EventHubOptions{Poll: time.Hour})
	s := a.open("/v1/events", tokenPM, "")
	waitStreams(t, hub, 1)
	for _, id := range []string{"born-1", "born-2"} {
		e.createFor("pm", id)
		if ev := next(t, s); ev.key() != id+"/"+store.EventInputRequested+"/" {
			t.Fatalf("got %s, want %s's input:requested", ev.key(), id)
		}
	}
}

// followLog is a change feed's switch for creations that records each
// turn and what the hub had read of the tails by then.
type followLog struct {
	src   *countedEvents
	turns chan followTurn
	fails atomic.Int32 // turns still to fail
}

type followTurn struct {
	on        bool
	tailsRead int64
}

func (f *followLog) FollowCreations(_ context.Context, on bool) error {
	f.turns <- followTurn{on: on, tailsRead: f.src.tails.Load()}
	if f.fails.Add(-1) >= 0 {
		return errors.New("redis: connection refused")
	}
	return nil
}

func (f *followLog) next(t *testing.T) followTurn {
	t.Helper()
	select {
	case turn := <-f.turns:
		return turn
	case <-time.After(time.Minute):
		t.Fatal("the hub did not turn the creations' switch")
		return followTurn{}
	}
}

// followingHub is an API whose hub is woken by changes (unbuffered: a send
// returns once the hub took it) and never by its Poll, with a switch for
// creations that records each turn and fails the first fails of them.
func (e *env) followingHub(fails int32) (*api, *webhook.EventHub, *followLog, chan string) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), hubCtxKey{}, true))
	e.t.Cleanup(cancel)
	src := &countedEvents{Store: e.st}
	follow := &followLog{src: src, turns: make(chan followTurn, 8)}
	follow.fails.Store(fails)
	changes := make(chan string)
	hub := webhook.NewEventHub(ctx, src, changes, webhook.EventHubOptions{Poll: time.Hour, Creations: follow})
	return e.api(func(o *webhook.Options) { o.Events = hub }), hub, follow, changes
}

// The hub follows creations only while streams are open: on before it
// reads the tails for the first stream (so each creation after them wakes
// it), off once it goes idle, on again for the next stream.
func TestEventHubFollowsCreationsOnlyWhileStreamsAreOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, hub, follow, changes := e.followingHub(0)

	e.createFor("pm", "follow-1")
	changes <- "follow-1"
	select {
	case turn := <-follow.turns:
		t.Fatalf("idle, the hub turned creations %v", turn.on)
	default:
	}

	s := a.open("/v1/events", tokenPM, "")
	if turn := follow.next(t); !turn.on || turn.tailsRead != 0 {
		t.Fatalf("first stream: turned %v with the tails read %d times, want on before reading them", turn.on, turn.tailsRead)
	}
	e.createFor("pm", "follow-2")
	changes <- "follow-2"
	for ev := next(t, s); ev.RequestID != "follow-2"; ev = next(t, s) {
	}

	s.Close()
	waitStreams(t, hub, 0)
	changes <- "follow-2" // a wake-up: the hub finds itself idle
	if turn := follow.next(t); turn.on {
		t.Fatal("idle again, the hub turned creations on, want off")
	}

	r := a.open("/v1/events", tokenPM, "")
	defer r.Close()
	if turn := follow.next(t); !turn.on || turn.tailsRead != 1 {
		t.Fatalf("next stream: turned %v with the tails read %d times, want on before reading them again", turn.on, turn.tailsRead)
	}
}

// Following creations failing does not hold a stream back (the hub reads on
// its Poll meanwhile): the stream opens, and the hub tries again at its
// next wake-up.
func TestEventHubServesStreamsWhenFollowingCreationsFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, _, follow, changes := e.followingHub(1)

	e.createFor("pm", "fail-1")
	s := a.open("/v1/requests/fail-1/events", tokenPM, "")
	defer s.Close()
	if turn := follow.next(t); !turn.on {
		t.Fatal("first stream: turned creations off, want on")
	}
	if ev := next(t, s); ev.key() != "fail-1/"+store.EventInputRequested+"/" {
		t.Fatalf("got %s, want fail-1's input:requested", ev.key())
	}
	changes <- "fail-1" // a wake-up: the hub tries again
	if turn := follow.next(t); !turn.on {
		t.Fatal("after a failure: turned creations off, want on again")
	}
	changes <- "fail-1"
	changes <- "fail-1" // taken once the wake-up before it was handled
	select {
	case turn := <-follow.turns:
		t.Fatalf("following already, the hub turned creations %v again", turn.on)
	default:
	}
}
