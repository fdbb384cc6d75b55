package slackout

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// postStore is the part of Store a first post uses, in memory; Load of an
// id in fail fails as a store outage would.
type postStore struct {
	Store // the rest: unused by a first post (a call panics)
	mu    sync.Mutex
	recs  map[string]store.Record
	reqs  map[string]*aah.Request
	fail  map[string]error
}

func (s *postStore) Load(_ context.Context, id string) (store.Record, *aah.Request, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail[id]; err != nil {
		return store.Record{}, nil, err
	}
	rec, ok := s.recs[id]
	if !ok {
		return store.Record{}, nil, store.ErrNotFound
	}
	return rec, s.reqs[id], nil
}

func (s *postStore) LoadShared(ctx context.Context, id string) (store.Record, *aah.Request, error) {
	return s.Load(ctx, id)
}
func (s *postStore) TakePostTurn(context.Context, store.PostTurn, store.Pacing) (store.Turn, error) {
	return store.Turn{Taken: true}, nil
}
func (s *postStore) EndPostTurn(context.Context, store.PostTurn) (string, error)         { return "", nil }
func (s *postStore) PullPostJob(context.Context, string, time.Time) error                { return nil }
func (s *postStore) ReturnPostTurn(context.Context, store.PostTurn, time.Duration) error { return nil }
func (s *postStore) LeavePostQueue(context.Context, store.PostTurn) error                { return nil }
func (s *postStore) SetMentions(context.Context, string, []string, ...string) error      { return nil }
func (s *postStore) BeginPost(context.Context, string, bool) (store.Attempt, error) {
	return store.Attempt{N: 1}, nil
}
func (s *postStore) AbandonPost(context.Context, string) error { return nil }
func (s *postStore) RecordPost(_ context.Context, id, channel, ts string, _ int64, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.recs[id]
	rec.Slack.Channel, rec.Slack.TS = channel, ts
	s.recs[id] = rec
	return nil
}
func (s *postStore) NoteChannelID(context.Context, string, string) error                { return nil }
func (s *postStore) SetPermalink(context.Context, string, string, string, string) error { return nil }

// followUpFixture is a request of deploy-bot following up its deferred
// req-first, with that request and another agent's stored too.
func followUpFixture() *postStore {
	at := time.Date(2027, 2, 16, 10, 0, 0, 0, time.UTC)
	request := func(id, title string, parents ...string) *aah.Request {
		return &aah.Request{Artifact: aah.Artifact{ID: id, Title: title},
			Handoff: aah.Handoff{ParentArtifactIDs: parents},
			Data:    aah.Data{Decisions: []aah.Decision{{ID: "d1", Type: aah.TypeApproval, Prompt: "Scale?", Required: true}}}}
	}
	return &postStore{
		recs: map[string]store.Record{
			"req-first": {ID: "req-first", Agent: "deploy-bot", Status: aah.StatusResolved,
				Slack:     store.SlackState{Permalink: "https://example.slack.com/archives/C0APPROVALS/p1"},
				Directive: &aah.Directive{Verb: aah.VerbDefer, Text: "Try a smaller batch", By: aah.Person{ID: "U0BOB"}, At: at}},
			"req-other": {ID: "req-other", Agent: "other-bot", Status: aah.StatusResolved},
			"req-again": {ID: "req-again", Agent: "deploy-bot", Status: aah.StatusPending, Version: 1, Channel: slackemu.ChannelApprovals, ReceivedAt: at},
			"req-stray": {ID: "req-stray", Agent: "deploy-bot", Status: aah.StatusPending, Version: 1, Channel: slackemu.ChannelApprovals, ReceivedAt: at},
		},
		reqs: map[string]*aah.Request{
			"req-first": request("req-first", "Scale the API"),
			"req-other": request("req-other", "Another agent's request"),
			"req-again": request("req-again", "Scale the API, smaller", "req-first"),
			"req-stray": request("req-stray", "Scale the API, elsewhere", "req-other", "req-unknown"),
		},
		fail: map[string]error{},
	}
}

// post runs the post job for id and returns the message it posted and
// what was logged.
func post(t *testing.T, st *postStore, id string) (slackemu.Message, string) {
	t.Helper()
	emu := slackemu.New(slackemu.Options{})
	t.Cleanup(func() { _ = emu.Close() })
	api := slack.New(emu.Token(), slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(emu.Client()))
	var logged bytes.Buffer
	handlers, err := Handlers(Options{Slack: api, Store: st, GrantMax: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	if err := handlers[store.JobPost].Handle(context.Background(), store.Job{RequestID: id}); err != nil {
		t.Fatalf("post %s: %v", id, err)
	}
	msgs := emu.Messages(slackemu.ChannelApprovals)
	if len(msgs) != 1 {
		t.Fatalf("%d messages posted, want 1", len(msgs))
	}
	return msgs[0], logged.String()
}

// A request that follows up its agent's earlier one says so, linked, with
// how the first ended; Slack (the emulator) accepts the message.
func TestPostShowsFollowUp(t *testing.T) {
	t.Parallel()
	msg, _ := post(t, followUpFixture(), "req-again")
	blocks := string(msg.Blocks)
	for _, want := range []string{"Follow-up of \\u003chttps://example.slack.com/archives/C0APPROVALS/p1|Scale the API\\u003e",
		"deferred by \\u003c@U0BOB\\u003e: Try a smaller batch"} {
		if !strings.Contains(blocks, want) {
			t.Errorf("the message lacks %s:\n%s", want, blocks)
		}
	}
}

// Parents that are another agent's request or unknown show no line.
func TestPostShowsNoForeignFollowUp(t *testing.T) {
	t.Parallel()
	msg, logged := post(t, followUpFixture(), "req-stray")
	if strings.Contains(string(msg.Blocks), "Follow-up") {
		t.Errorf("another agent's request is shown as the parent:\n%s", msg.Blocks)
	}
	if logged != "" {
		t.Errorf("an unknown or foreign parent is not a failure, yet: %s", logged)
	}
}

// A failed look-up of the parent does not hold the post: the message goes
// out without the line, and the failure is logged.
func TestPostWithoutFollowUpWhenLookupFails(t *testing.T) {
	t.Parallel()
	st := followUpFixture()
	st.fail["req-first"] = errors.New("redis: i/o timeout")
	msg, logged := post(t, st, "req-again")
	if strings.Contains(string(msg.Blocks), "Follow-up") {
		t.Errorf("the line shows although the parent could not be read:\n%s", msg.Blocks)
	}
	if !strings.Contains(logged, "follows up") || !strings.Contains(logged, "i/o timeout") || !strings.Contains(logged, "req-again") {
		t.Errorf("the failed look-up is not logged: %q", logged)
	}
}

// A reminder's last copy says how a directive ended the request, not that
// it "was decided".
func TestClosedReminderCopyNamesTheDirective(t *testing.T) {
	t.Parallel()
	req := &aah.Request{Artifact: aah.Artifact{ID: "r1", Title: "Scale"}}
	rec := store.Record{ID: "r1", Status: aah.StatusResolved, ResolvedBy: aah.Person{ID: "U0BOB"},
		Directive: &aah.Directive{Verb: aah.VerbAbort, Text: "incident", By: aah.Person{ID: "U0BOB"}}}
	h := timerDeps{log: slog.New(slog.DiscardHandler)}
	text, _ := h.closedCopy(context.Background(), req, rec, "remind:1:U0ALICE")
	if !strings.Contains(text, "it was aborted by <@U0BOB>") || strings.Contains(text, "decided") {
		t.Errorf("closed reminder = %q", text)
	}
	rec.Directive = nil
	if text, _ := h.closedCopy(context.Background(), req, rec, "remind:1:U0ALICE"); !strings.Contains(text, "was decided by <@U0BOB>") {
		t.Errorf("closed reminder without a directive = %q", text)
	}
}
