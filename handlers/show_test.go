package handlers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
)

// oneRequest loads one stored request.
type oneRequest struct{ rec store.Record }

func (o oneRequest) Load(_ context.Context, id string) (store.Record, *aah.Request, error) {
	if id != o.rec.ID {
		return store.Record{}, nil, store.ErrNotFound
	}
	req, err := o.rec.Request()
	return o.rec, req, err
}

// "/approvals show" renders a request exactly as its message does: an
// escalated channel is linked in both (it used to print the raw id).
func TestShowRendersAsTheMessage(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(map[string]any{
		"aah_version": "0.1",
		"artifact":    map[string]any{"id": "esc-1", "type": "decision/request", "title": "Ship", "created_at": "2027-02-16T10:00:00Z"},
		"source":      map[string]any{"agent_id": "release-bot"},
		"content": map[string]any{"body": map[string]any{"schema": "aah:decision/request@1.0", "data": map[string]any{
			"title": "Ship", "decisions": []any{map[string]any{"id": "ship", "type": "approval", "prompt": "Ship it?", "required": true}},
		}}},
		"handoff": map[string]any{"expects_response": false},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := store.Record{ID: "esc-1", Agent: "pm", Status: aah.StatusEscalated, Document: raw, Version: 3,
		ReceivedAt: time.Date(2027, 2, 16, 10, 0, 0, 0, time.UTC), EscalatedTo: []string{"U0MORGAN"},
		EscalatedChannels: []string{"C0ESCALATE", "#ops"}}
	defaults := aah.Defaults{Quorum: 1}
	s, err := New(Options{Decisions: noDecisions{}, Requests: oneRequest{rec}, Slack: noSlack{}, Defaults: defaults})
	if err != nil {
		t.Fatal(err)
	}
	shown := unescapedJSON(t, s.show(context.Background(), "esc-1").Blocks)
	req, _ := rec.Request()
	message := unescapedJSON(t, blocks.Render(req, approval.View(rec, defaults)).Blocks) // what the poster posts
	if shown != message {
		t.Errorf("show and the message differ:\n show %s\n  msg %s", shown, message)
	}
	for _, want := range []string{"<#C0ESCALATE>", "<@U0MORGAN>", "#ops"} {
		if !strings.Contains(shown, want) {
			t.Errorf("show lacks %s: %s", want, shown)
		}
	}
}

func unescapedJSON(t *testing.T, v any) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
