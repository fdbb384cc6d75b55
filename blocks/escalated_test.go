package blocks_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
)

// An escalated request's banner names whom it was escalated to; without
// targets it keeps the plain banner.
func TestEscalatedBannerNamesTargets(t *testing.T) {
	req := &aah.Request{
		Artifact: aah.Artifact{ID: "r1", Title: "Ship it"},
		Data:     aah.Data{Decisions: []aah.Decision{{ID: "d1", Type: aah.TypeApproval, Prompt: "Ship?"}}},
	}
	text := func(st blocks.State) string {
		b, _ := json.Marshal(blocks.Render(req, st).Blocks)
		return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(b))
	}
	got := text(blocks.State{Status: aah.StatusEscalated, EscalatedTo: []string{"<@U0MANAGER>", "<#C0GENERAL>"}})
	if !strings.Contains(got, ":arrow_heading_up: *Escalated* to <@U0MANAGER>, <#C0GENERAL>: still waiting for a decision.") {
		t.Errorf("banner does not name the targets: %s", got)
	}
	if !strings.Contains(got, `"type":"actions"`) {
		t.Error("an escalated request lost its controls")
	}
	if got := text(blocks.State{Status: aah.StatusEscalated}); !strings.Contains(got, ":arrow_heading_up: *Escalated*: still waiting") {
		t.Errorf("banner without targets: %s", got)
	}
}

// Escalation targets given as a user, a user group or a channel id show as
// Slack mentions in the timing line; emails and channel names stay text.
func TestEscalationTargetsShowAsMentions(t *testing.T) {
	req := &aah.Request{
		Artifact: aah.Artifact{ID: "r1", Title: "Ship it"},
		Data: aah.Data{Decisions: []aah.Decision{{ID: "d1", Type: aah.TypeApproval, Prompt: "Ship?"}},
			Escalation: []aah.EscalationStep{{To: "U0MANAGER", After: time.Hour}, {To: "S0LEADS", After: 2 * time.Hour},
				{To: "C0OPS", After: 3 * time.Hour}, {To: "boss@example.com", After: 4 * time.Hour}}},
	}
	b, _ := json.Marshal(blocks.Render(req, blocks.State{Status: aah.StatusPending}).Blocks)
	got := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(b))
	for _, want := range []string{"Escalates to <@U0MANAGER> after", "Escalates to <!subteam^S0LEADS> after",
		"Escalates to <#C0OPS> after", "Escalates to boss@example.com after"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %s", want, got)
		}
	}
	for in, want := range map[string]string{"U0MANAGER": "<@U0MANAGER>", " S0LEADS ": "<!subteam^S0LEADS>",
		"C0OPS": "<#C0OPS>", "#ops": "#ops", "a<b@example.com": "a&lt;b@example.com"} {
		if got := blocks.TargetMention(in); got != want {
			t.Errorf("TargetMention(%q) = %q, want %q", in, got, want)
		}
	}
}

// The Home tab shows an escalated request's progress while it is open and
// that it was escalated once it closed.
func TestHomeShowsEscalation(t *testing.T) {
	req := &aah.Request{
		Artifact: aah.Artifact{ID: "r1", Title: "Ship it"},
		Data: aah.Data{Decisions: []aah.Decision{{ID: "d1", Type: aah.TypeApproval, Prompt: "Ship?"},
			{ID: "d2", Type: aah.TypeApproval, Prompt: "Tell?"}}},
	}
	answers := map[string]aah.Answer{"d1": {Value: true, By: aah.Person{ID: "U0A"}}}
	view := blocks.HomeView(blocks.Home{Answered: []blocks.ListItem{
		{ID: "r1", Request: req, Status: aah.StatusEscalated, Escalated: true, Answers: answers},
		{ID: "r2", Request: req, Status: aah.StatusResolved, Escalated: true, Answers: answers},
	}})
	b, _ := json.Marshal(view.Blocks)
	got := string(b)
	for _, want := range []string{":rotating_light: escalated · 1 of 2 answered", ":white_check_mark: resolved (escalated)"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %s", want, got)
		}
	}
}
