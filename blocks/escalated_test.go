package blocks_test

import (
	"encoding/json"
	"strings"
	"testing"

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
