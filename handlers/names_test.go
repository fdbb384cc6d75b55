package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/slack-go/slack"
)

// directoryNames knows Alice's name and fails for everyone else.
type directoryNames struct{}

func (directoryNames) UserName(_ context.Context, id string) (string, error) {
	if id == "U0ALICE" {
		return "Alice Liddell", nil
	}
	return "", errors.New("users.info: user_not_found")
}

// submittingDecisions keeps who answered and who submitted with what.
type submittingDecisions struct {
	noDecisions
	mu        sync.Mutex
	by        []aah.Person
	submitted []string
}

func (d *submittingDecisions) Answer(_ context.Context, _ string, by aah.Person, _ map[string]any) (approval.Outcome, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.by = append(d.by, by)
	return approval.Outcome{}, nil
}

func (d *submittingDecisions) SubmitWithComment(_ context.Context, _ string, by aah.Person, comment string) (approval.Outcome, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.by = append(d.by, by)
	d.submitted = append(d.submitted, comment)
	return approval.Outcome{}, nil
}

func payload(t *testing.T, raw string) *slack.InteractionCallback {
	t.Helper()
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(raw), &cb); err != nil {
		t.Fatal(err)
	}
	return &cb
}

// A click records the person by their directory name (real or display
// name), not the handle its payload carries; a failed lookup names them
// by the payload's real name, else by their id, and the answer is
// recorded all the same. The submit modal's comment reaches
// SubmitWithComment; plain Submit stays one click, without one.
func TestClicksCarryDirectoryNames(t *testing.T) {
	t.Parallel()
	dec := &submittingDecisions{}
	async := NewAsync(1, 4)
	t.Cleanup(async.Close)
	s, err := New(Options{Decisions: dec, Requests: noRequests{}, Slack: noSlack{}, Async: async, Names: directoryNames{}})
	if err != nil {
		t.Fatal(err)
	}
	click := func(user, action string) {
		s.blockActions(context.Background(), payload(t, `{"type":"block_actions","trigger_id":"1.2.3","user":`+user+
			`,"channel":{"id":"C0APPROVALS"},"actions":[{"type":"button","action_id":"`+action+`","block_id":"`+
			blocks.BlockID(3, "req-1", "d1")+`","value":"true","action_ts":"1.2"}]}`))
	}
	click(`{"id":"U0ALICE","name":"alice"}`, blocks.ActionApprove)
	click(`{"id":"U0BOB","name":"bob"}`, blocks.ActionApprove)
	click(`{"id":"U0CAROL","name":"carol","real_name":"Carol Danvers"}`, blocks.ActionApprove)
	click(`{"id":"U0ALICE","name":"alice"}`, blocks.ActionSubmit)
	s.viewSubmission(context.Background(), payload(t, `{"type":"view_submission","user":{"id":"U0BOB","name":"bob"},
		"view":{"callback_id":"`+blocks.ModalSubmit+`","private_metadata":`+jsonString(blocks.ModalRef{RequestID: "req-1",
		DecisionID: blocks.RequestScope}.Encode())+`,"state":{"values":{"comment":{"text":{"type":"plain_text_input","value":"Ship it, carefully"}}}}}}`))

	dec.mu.Lock()
	defer dec.mu.Unlock()
	want := []aah.Person{{ID: "U0ALICE", Name: "Alice Liddell"}, {ID: "U0BOB", Name: "U0BOB"},
		{ID: "U0CAROL", Name: "Carol Danvers"}, {ID: "U0ALICE", Name: "Alice Liddell"}, {ID: "U0BOB", Name: "U0BOB"}}
	if len(dec.by) != len(want) {
		t.Fatalf("recorded %+v", dec.by)
	}
	for i := range want {
		if dec.by[i] != want[i] {
			t.Errorf("action %d by %+v, want %+v", i, dec.by[i], want[i])
		}
	}
	if len(dec.submitted) != 2 || dec.submitted[0] != "" || dec.submitted[1] != "Ship it, carefully" {
		t.Errorf("submitted with %q", dec.submitted)
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }
