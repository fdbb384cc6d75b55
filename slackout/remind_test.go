package slackout

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
)

func reminderFixture() (*aah.Request, store.Record) {
	req := &aah.Request{
		Artifact: aah.Artifact{ID: "r1", Title: "Ship <v2> & more"},
		Data: aah.Data{
			Decisions: []aah.Decision{
				{ID: "d1", Type: aah.TypeApproval, Prompt: "Approve budget?"},
				{ID: "d2", Type: aah.TypeApproval, Prompt: "Approve <launch>?"},
				{ID: "d3", Type: aah.TypeText, Prompt: "Name it"},
			},
			Deadline: time.Date(2027, 2, 17, 17, 0, 0, 0, time.UTC),
		},
		Slack: aah.SlackHints{Reviewers: []string{"U0ALICE", "bob@example.com", "nobody@example.com"}},
	}
	rec := store.Record{
		ID: "r1", ReceivedAt: time.Date(2027, 2, 16, 10, 0, 0, 0, time.UTC),
		Mentions: []string{"<@U0ALICE>", "<@U0BOB>", "nobody@example.com"},
		Answers: map[string]aah.Answer{
			"d1": {DecisionID: "d1", Value: true, By: aah.Person{ID: "U0ALICE"}},
			"d3": {DecisionID: "d3", Comments: []aah.Comment{{By: aah.Person{ID: "U0BOB"}, Text: "just a comment"}}, By: aah.Person{ID: "U0BOB"}},
		},
		Slack: store.SlackState{Channel: "C1", TS: "1.2", Permalink: "https://example.slack.com/archives/C1/p12"},
	}
	return req, rec
}

func TestReminderMessage(t *testing.T) {
	req, rec := reminderFixture()
	text, blks := reminderMessage(req, rec, rec.ReceivedAt.Add(27*time.Hour+5*time.Minute), false)
	got := blocksJSON(blks)
	for _, want := range []string{
		"<https://example.slack.com/archives/C1/p12|Ship &lt;v2&gt; &amp; more>", // escaped title, linked
		"waiting for your decision",
		"Still pending (2 of 3)",
		"Approve &lt;launch&gt;?", // d2: escaped
		"Name it",                 // d3 has only a comment
		"Waiting 1 day 3 hours",
		"<!date^1802883600^{date_short_pretty} at {time}|2027-02-17 17:00 UTC>",
		"Open the request",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("reminder blocks lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Approve budget?") {
		t.Error("an answered decision is listed as pending")
	}
	if !strings.Contains(text, "2 pending") || !strings.Contains(text, "Ship &lt;v2&gt;") {
		t.Errorf("text = %q", text)
	}
	if len(blks) > blocks.MaxMessageBlocks {
		t.Errorf("%d blocks", len(blks))
	}

	_, thread := reminderMessage(req, store.Record{ReceivedAt: rec.ReceivedAt}, rec.ReceivedAt.Add(30*time.Second), true)
	if s := blocksJSON(thread); !strings.Contains(s, "waiting for a decision") || strings.Contains(s, "Open the request") ||
		!strings.Contains(s, "less than a minute") || !strings.Contains(s, "Still pending (3 of 3)") {
		t.Errorf("thread reminder without permalink or answers: %s", s)
	}
}

func TestReminderRecipients(t *testing.T) {
	req, rec := reminderFixture()
	// Alice answered; Bob only commented; nobody@ did not resolve.
	if got := reminderRecipients(req, rec); strings.Join(got, ",") != "U0BOB" {
		t.Errorf("recipients = %v, want [U0BOB]", got)
	}
	rec.Mentions = nil // not posted yet: emails are not known
	if got := reminderRecipients(req, rec); len(got) != 0 {
		t.Errorf("recipients before the post = %v, want none (Alice answered)", got)
	}
	req.Slack.Reviewers = nil
	if got := reminderRecipients(req, rec); strings.Join(got, ",") != store.ReminderThread {
		t.Errorf("recipients without reviewers = %v", got)
	}
}

// How long a request has waited, in a reminder (when the next reminder is
// due is approval's: see approval/timers_test.go).
func TestHumanWait(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Minute: "1 minute", 90 * time.Minute: "1 hour 30 minutes", 3 * time.Hour: "3 hours",
		48 * time.Hour: "2 days", 49*time.Hour + time.Minute: "2 days 1 hour",
	} {
		if got := humanWait(d); got != want {
			t.Errorf("humanWait(%v) = %q, want %q", d, got, want)
		}
	}
}

func blocksJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	// slack-go's own marshallers escape HTML regardless.
	return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(b.String())
}
