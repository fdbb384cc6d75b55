package blocks_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/bot/slackemu"
)

// An answer given by the on_deadline action never reads like a person's:
// it is marked as timed out as plainly as a default, shows no person's
// verdict icon, and the progress line does not count it as answered.
func TestTimedOutAnswersAreMarked(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/seed000_request.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, action := range []aah.DeadlineAction{aah.DeadlineReject, aah.DeadlineApprove} {
		req := parse(t, raw)
		req.OnDeadline = action
		verdict := action == aah.DeadlineApprove
		answers := map[string]aah.Answer{
			"d3": {DecisionID: "d3", Value: "next_week", Defaulted: true},
		}
		for _, d := range []string{"d1", "d2", "d4"} {
			answers[d] = aah.Answer{DecisionID: d, Value: verdict, TimedOut: true}
		}
		msg := blocks.Render(req, blocks.State{Status: aah.StatusResolved, Version: 3, ReceivedAt: seedNow,
			ClosedAt: seedNow.Add(24 * time.Hour), Answers: answers})
		checkSlackLimits(t, msg)
		text := slackemu.RenderText([]byte(mustJSON(t, msg.Blocks)))
		if n := strings.Count(text, "timed out: nobody answered"); n != 3 {
			t.Errorf("%s: %d answers marked timed out, want 3:\n%s", action, n, text)
		}
		for _, looksHuman := range []string{":x: *Reject*", ":white_check_mark: *Approve*"} {
			if strings.Contains(text, looksHuman) {
				t.Errorf("%s: a timed-out answer reads like a person's (%q):\n%s", action, looksHuman, text)
			}
		}
		if !strings.Contains(text, "0 of 4 answered") || !strings.Contains(text, "3 timed out") || !strings.Contains(text, "1 took the default") {
			t.Errorf("%s: progress line counts answers nobody gave:\n%s", action, text)
		}
		if !strings.Contains(text, "Resolved at the deadline") {
			t.Errorf("%s: the banner does not say the deadline resolved it:\n%s", action, text)
		}
	}
}
