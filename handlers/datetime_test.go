package handlers

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/slack-go/slack"
)

// recordingDecisions keeps every answer it is given.
type recordingDecisions struct {
	noDecisions
	mu      sync.Mutex
	answers []map[string]any
}

func (r *recordingDecisions) Answer(_ context.Context, _ string, _ aah.Person, values map[string]any) (approval.Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers = append(r.answers, values)
	return approval.Outcome{}, nil
}

// A date-and-time picker sends unix seconds; the answer is the moment as an
// RFC 3339 UTC date-time. A date picker's day is passed on as it came.
func TestDatePickersAnswerInISOForm(t *testing.T) {
	t.Parallel()
	rec := &recordingDecisions{}
	async := NewAsync(1, 4)
	t.Cleanup(async.Close)
	s, err := New(Options{Decisions: rec, Requests: noRequests{}, Slack: noSlack{}, Async: async})
	if err != nil {
		t.Fatal(err)
	}
	// Payload shapes as Slack sends them (block_actions, datetimepicker and datepicker).
	raw := `{"type":"block_actions","trigger_id":"1.2.3","user":{"id":"U0ALICE","name":"alice"},"channel":{"id":"C0APPROVALS"},
	  "actions":[
	    {"type":"datetimepicker","action_id":"` + blocks.ActionDate + `","block_id":"` + blocks.BlockID(3, "req-1", "when") + `",
	     "selected_date_time":1772461800,"action_ts":"1772400000.000100"},
	    {"type":"datepicker","action_id":"` + blocks.ActionDate + `","block_id":"` + blocks.BlockID(3, "req-1", "day") + `",
	     "selected_date":"2026-03-04","initial_date":"2026-03-01","action_ts":"1772400000.000200"}]}`
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(raw), &cb); err != nil {
		t.Fatal(err)
	}
	s.blockActions(context.Background(), &cb)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.answers) != 2 {
		t.Fatalf("answers = %v, want two", rec.answers)
	}
	if got := rec.answers[0]["when"]; got != "2026-03-02T14:30:00Z" {
		t.Errorf("datetimepicker answered %v, want 2026-03-02T14:30:00Z", got)
	}
	if got := rec.answers[1]["day"]; got != "2026-03-04" {
		t.Errorf("datepicker answered %v, want 2026-03-04", got)
	}
}
