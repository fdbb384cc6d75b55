package approval

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
)

// The view names escalation targets as Slack shows them: users and channel
// ids as links, channel names as text; a closed request's closing time.
func TestView(t *testing.T) {
	t.Parallel()
	rec := store.Record{ID: "r1", Agent: "pm", Status: aah.StatusEscalated, Version: 3,
		EscalatedTo: []string{"U1"}, EscalatedChannels: []string{"C0GENERAL", "#ops"}}
	st := View(rec, aah.Defaults{Quorum: 2, OverrideAgents: []string{"other"}})
	if want := []string{"<@U1>", "<#C0GENERAL>", "#ops"}; !slices.Equal(st.EscalatedTo, want) {
		t.Errorf("escalated to %v, want %v", st.EscalatedTo, want)
	}
	if st.Version != 3 || st.Defaults.Quorum != 2 || !st.ClosedAt.IsZero() {
		t.Errorf("view %+v", st)
	}
	at := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	rec.Status, rec.WithdrawnAt = aah.StatusWithdrawn, at
	if st := View(rec, aah.Defaults{}); !st.ClosedAt.Equal(at) {
		t.Errorf("closed at %v", st.ClosedAt)
	}
}

// The view carries what the record holds of reviewers' verbs, and the
// options add the grant limit and the follow-up.
func TestViewCarriesDirectiveAndOptions(t *testing.T) {
	t.Parallel()
	at := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	dir := &aah.Directive{Verb: aah.VerbDefer, Text: "smaller batch", By: aah.Person{ID: "U1"}, At: at}
	re := []aah.Reassignment{{By: aah.Person{ID: "U1"}, To: "U2", At: at, Note: "yours"}}
	rec := store.Record{ID: "r1", Agent: "pm", Status: aah.StatusResolved, ResolvedAt: at, Directive: dir, Reassignments: re}
	parent := &blocks.FollowUp{ID: "r0", Title: "First try"}
	st := View(rec, aah.Defaults{}, WithGrantMax(time.Hour), WithFollowUp(parent))
	if st.Directive != dir || len(st.Reassignments) != 1 || st.Reassignments[0].Note != "yours" ||
		st.GrantMax != time.Hour || st.FollowUpOf != parent {
		t.Errorf("view %+v", st)
	}
	if st := View(rec, aah.Defaults{}); st.GrantMax != 0 || st.FollowUpOf != nil {
		t.Errorf("without options the view offers grants or a follow-up: %+v", st)
	}
	if item := ListItem(rec, nil, aah.Defaults{}); item.Directive != dir {
		t.Errorf("list item directive %v", item.Directive)
	}
}

// loader is RequestLoader over records and documents in memory; fail makes
// every look-up of that id fail as a store outage would.
type loader struct {
	recs map[string]store.Record
	reqs map[string]*aah.Request
	fail map[string]error
	read []string
}

func (l *loader) Load(_ context.Context, id string) (store.Record, *aah.Request, error) {
	l.read = append(l.read, id)
	if err := l.fail[id]; err != nil {
		return store.Record{}, nil, err
	}
	rec, ok := l.recs[id]
	if !ok {
		return store.Record{}, nil, store.ErrNotFound
	}
	return rec, l.reqs[id], nil
}

// A follow-up names its agent's earlier request: found by the first parent
// id that is one; unknown ids and other agents' requests are skipped; a
// failed look-up is an error the caller logs.
func TestFollowUpOf(t *testing.T) {
	t.Parallel()
	dir := &aah.Directive{Verb: aah.VerbChangePlan, Text: "use the blue pool", By: aah.Person{ID: "U1"}}
	titled := func(title string) *aah.Request {
		return &aah.Request{Artifact: aah.Artifact{Title: title}}
	}
	l := &loader{
		recs: map[string]store.Record{
			"mine":   {ID: "mine", Agent: "deploy-bot", Directive: dir, Slack: store.SlackState{Permalink: "https://x.slack.com/p1"}},
			"theirs": {ID: "theirs", Agent: "other-bot"},
		},
		reqs: map[string]*aah.Request{"mine": titled("Scale the API"), "theirs": titled("Someone else's")},
		fail: map[string]error{"broken": errors.New("redis: connection refused")},
	}
	rec := store.Record{ID: "now", Agent: "deploy-bot"}
	follow := func(ids ...string) (*blocks.FollowUp, error) {
		req := titled("Scale the API again")
		req.Handoff.ParentArtifactIDs = ids
		return FollowUpOf(context.Background(), l, rec, req)
	}
	got, err := follow("unknown", "theirs", "now", "mine")
	if err != nil || got == nil {
		t.Fatalf("FollowUpOf = %v, %v", got, err)
	}
	if got.ID != "mine" || got.Title != "Scale the API" || got.Permalink != "https://x.slack.com/p1" || got.Directive != dir {
		t.Errorf("follow-up %+v", got)
	}
	if slices.Contains(l.read, "now") {
		t.Errorf("a request was looked up as its own parent: %v", l.read)
	}
	for _, ids := range [][]string{nil, {"unknown"}, {"theirs"}, {"now"}} {
		if got, err := follow(ids...); got != nil || err != nil {
			t.Errorf("parents %v: follow-up %+v, %v; want none", ids, got, err)
		}
	}
	if got, err := follow("broken", "mine"); err == nil || got != nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("a failed look-up = %v, %v; want an error naming the id", got, err)
	}
}
