package handlers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
)

// limitedDecisions is a decider that knows the standing-approval limit, as
// the core does once standing approvals are configured.
type limitedDecisions struct {
	noDecisions
	max time.Duration
}

func (l limitedDecisions) GrantMax() time.Duration { return l.max }

// requests loads stored requests by id.
type requests map[string]store.Record

func (r requests) Load(_ context.Context, id string) (store.Record, *aah.Request, error) {
	rec, ok := r[id]
	if !ok {
		return store.Record{}, nil, store.ErrNotFound
	}
	req, err := rec.Request()
	return rec, req, err
}

func reviewDoc(t *testing.T, id string, parents ...string) []byte {
	t.Helper()
	handoff := map[string]any{"expects_response": false}
	if len(parents) > 0 {
		handoff["parent_artifact_ids"] = parents
	}
	raw, err := json.Marshal(map[string]any{
		"aah_version": "0.1",
		"artifact":    map[string]any{"id": id, "type": "decision/request", "title": "Scale " + id, "created_at": "2027-02-16T10:00:00Z"},
		"source":      map[string]any{"agent_id": "ops-agent"},
		"content": map[string]any{"body": map[string]any{"schema": "aah:decision/request@1.0", "data": map[string]any{
			"decisions": []any{map[string]any{"id": "scale", "type": "approval", "prompt": "Scale it?", "required": true}},
		}}},
		"handoff": handoff,
		"extensions": map[string]any{"decisions": map[string]any{"scale": map[string]any{
			"proposed_action": map[string]any{"tool_name": "scale_service", "parameters": map[string]any{"replicas": 6}},
			"responses":       []string{"approve", "reject", "defer"},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// "/approvals show" offers what the message offers: "Approve similar…"
// when the core allows standing approvals, and the follow-up line.
func TestShowOffersGrantsAndFollowUp(t *testing.T) {
	t.Parallel()
	at := time.Date(2027, 2, 16, 10, 0, 0, 0, time.UTC)
	stored := requests{
		"first": {ID: "first", Agent: "ops", Status: aah.StatusResolved, Document: reviewDoc(t, "first"), Version: 4, ReceivedAt: at,
			Directive: &aah.Directive{Verb: aah.VerbDefer, Text: "smaller steps", By: aah.Person{ID: "U0BOB"}, At: at}},
		"again": {ID: "again", Agent: "ops", Status: aah.StatusPending, Document: reviewDoc(t, "again", "first"), Version: 1, ReceivedAt: at},
	}
	for _, tc := range []struct {
		max     time.Duration
		similar bool
	}{{time.Hour, true}, {0, false}} {
		s, err := New(Options{Decisions: limitedDecisions{max: tc.max}, Requests: stored, Slack: noSlack{}})
		if err != nil {
			t.Fatal(err)
		}
		shown := unescapedJSON(t, s.show(context.Background(), "again").Blocks)
		if got := strings.Contains(shown, `"action_id":"`+blocks.ActionApproveSimilar+`"`); got != tc.similar {
			t.Errorf("limit %s: Approve similar shown = %v, want %v", tc.max, got, tc.similar)
		}
		if !strings.Contains(shown, "Follow-up of *Scale first*") || !strings.Contains(shown, `deferred by \u003c@U0BOB\u003e: smaller steps`) {
			t.Errorf("show lacks the follow-up line: %s", shown)
		}
		if !strings.Contains(shown, `"action_id":"`+blocks.ActionVerbs+`"`) {
			t.Errorf("show lacks the request menu: %s", shown)
		}
	}
}
