package blocks_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/slack-go/slack"
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

// Every reviewer's comment shows under the decision, each with its author
// (the person who answered needs no name); past what a section holds, the
// earliest are counted instead, and the message stays within Slack's limits.
func TestEveryCommentShows(t *testing.T) {
	t.Parallel()
	req := parse(t, wrap(decisionFixtures["approval"]))
	at := seedNow.Add(time.Hour)
	var comments []aah.Comment
	for i, who := range []string{"U0ALICE", "U0BOB", "U0CAROL", "U0DAVE", "U0ERIN"} {
		comments = append(comments, aah.Comment{By: aah.Person{ID: who}, At: at.Add(time.Duration(i) * time.Minute),
			Text: "Thoughts of " + who + " & <friends>"})
	}
	render := func(n int) string {
		msg := blocks.Render(req, blocks.State{Status: aah.StatusPartial, Version: 2, Answers: map[string]aah.Answer{
			"ship": {DecisionID: "ship", Value: true, By: aah.Person{ID: "U0ALICE"}, At: at, Comments: comments[:n]}}})
		checkSlackLimits(t, msg)
		return slackemu.RenderText([]byte(mustJSON(t, msg.Blocks)))
	}
	three := render(3)
	for _, want := range []string{"> Thoughts of U0ALICE & <friends>\n", "Thoughts of U0BOB & <friends> — @U0BOB",
		"Thoughts of U0CAROL & <friends> — @U0CAROL"} {
		if !strings.Contains(three, want) {
			t.Errorf("message lacks %q:\n%s", want, three)
		}
	}
	five := render(5)
	if !strings.Contains(five, "2 earlier comments") || !strings.Contains(five, "Thoughts of U0ERIN") || strings.Contains(five, "Thoughts of U0ALICE") {
		t.Errorf("with five comments the latest three should show and two be counted:\n%s", five)
	}
}

// "View details" splits long text into sections on safe boundaries: never
// inside an "&lt;" escape, and between words when there are any.
func TestDetailsSplitOnSafeBoundaries(t *testing.T) {
	t.Parallel()
	for name, desc := range map[string]string{
		"escapes": "x" + strings.Repeat("<", 1500),
		"words":   "y" + strings.Repeat("budget ", 900),
	} {
		req := parse(t, wrap(`{"id":"long","type":"approval","prompt":"Ok?","required":true,"description":"`+desc+`"}`))
		view := blocks.DetailsModal(req, req.Data.Decisions[0], blocks.ModalRef{RequestID: "req-fixture", DecisionID: "long"})
		raw := []byte(mustJSON(t, view))
		for _, e := range slackemu.ValidateView(raw) {
			t.Errorf("%s: Slack would reject this modal: %v", name, e)
		}
		var sections []string
		for _, b := range view.Blocks.BlockSet {
			if s, ok := b.(*slack.SectionBlock); ok {
				sections = append(sections, s.Text.Text)
			}
		}
		if len(sections) < 3 {
			t.Fatalf("%s: %d sections, want the description split", name, len(sections))
		}
		for _, s := range sections[1:] {
			if rest := strings.ReplaceAll(s, "&lt;", ""); strings.ContainsAny(rest, "&;") {
				t.Errorf("%s: a section holds a partial escape: …%q", name, s[max(0, len(s)-12):])
			}
			if name == "words" && !strings.HasSuffix(s, "budget") {
				t.Errorf("%s: a section ends inside a word: …%q", name, s[max(0, len(s)-12):])
			}
		}
	}
}
