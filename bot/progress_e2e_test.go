package bot_test

import (
	"testing"

	"github.com/approvalbot/approvalbot/blocks"
)

// While a request is open, GET shows the answers given so far: two
// reviewers, a quorum of two, Alice approves in Slack; GET names her
// sign-off (id, name, time) and the request is still open.
func TestGetShowsASlackAnswerWhileOpen(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startJobs()
	id := h.postAndWait(approvalRequest(t, "progress-1", map[string]any{"reviewers": []any{"U0ALICE", "U0BOB"}, "quorum": 2}))
	ok(t, h.click(alice, id, "ship", button(blocks.ActionApprove, "true")))

	view := h.get(id)
	if view["status"] != "partial" {
		t.Fatalf("status %v, want partial", view["status"])
	}
	answers, _ := view["answers"].([]any)
	if len(answers) != 1 {
		t.Fatalf("answers = %v", view["answers"])
	}
	ship := answers[0].(map[string]any)
	signoffs, _ := ship["signoffs"].([]any)
	if ship["decision_id"] != "ship" || ship["answered"] != false || len(signoffs) != 1 {
		t.Fatalf("ship = %v", ship)
	}
	so := signoffs[0].(map[string]any)
	stored := answersOf(t, h, id).Answers["ship"].Signoffs[0].By // her name as the click gave it
	if so["agent_id"] != "human:U0ALICE" || stored.Name == "" || so["agent_name"] != stored.Name || so["approved"] != true || so["at"] == "" {
		t.Errorf("alice's sign-off = %v", so)
	}
	if view["response"] != nil {
		t.Errorf("an open request has a response: %v", view["response"])
	}
}
