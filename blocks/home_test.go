package blocks_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/internal/slackemu"
)

func TestHomeGolden(t *testing.T) {
	t.Parallel()
	approval := parse(t, wrap(decisionFixtures["approval"]))
	text := parse(t, wrap(decisionFixtures["text"]))
	now := seedNow.Add(3 * time.Hour)
	waiting := []blocks.ListItem{
		{ID: "req-approve", Version: 2, Agent: "release-bot", Request: approval, Status: aah.StatusPending,
			ReceivedAt: seedNow, Permalink: "https://example.slack.com/archives/C0APPROVALS/p1"},
		{ID: "req-text", Version: 1, Agent: "pm", Request: text, Status: aah.StatusEscalated, ReceivedAt: seedNow.Add(time.Hour)},
	}
	answered := []blocks.ListItem{
		{ID: "req-done", Version: 5, Agent: "pm", Request: approval, Status: aah.StatusResolved, ReceivedAt: seedNow,
			Permalink: "https://example.slack.com/archives/C0APPROVALS/p2"},
		{ID: "req-partial", Version: 3, Agent: "pm", Request: text, Status: aah.StatusPartial, ReceivedAt: seedNow},
	}
	cases := map[string]blocks.Home{
		"home.full":  {Waiting: waiting, Answered: answered, More: true, Command: "/approvals", Now: now},
		"home.empty": {Command: "/approvals", Now: now},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			view := blocks.HomeView(h)
			golden(t, name, view)
			validHome(t, view)
		})
	}
}

// Full lists stay within a Home tab's 100 blocks, with the quick buttons
// carrying the request message's block ids.
func TestHomeFull(t *testing.T) {
	t.Parallel()
	approval := parse(t, wrap(decisionFixtures["approval"]))
	var items []blocks.ListItem
	for i := range 30 {
		items = append(items, blocks.ListItem{ID: fmt.Sprintf("req-%02d", i), Version: 4, Request: approval,
			Status: aah.StatusPending, ReceivedAt: seedNow})
	}
	view := blocks.HomeView(blocks.Home{Waiting: items, Answered: items, Command: "/approvals", Now: seedNow})
	if len(view.Blocks.BlockSet) > blocks.MaxHomeBlocks {
		t.Fatalf("%d blocks", len(view.Blocks.BlockSet))
	}
	raw := mustJSON(t, view)
	if n := strings.Count(raw, `"action_id":"`+blocks.ActionApprove+`"`); n != blocks.MaxHomeWaiting {
		t.Errorf("approve buttons = %d, want %d", n, blocks.MaxHomeWaiting)
	}
	if !strings.Contains(raw, blocks.BlockID(4, "req-00", "ship")) || !strings.Contains(raw, "/approvals mine") {
		t.Errorf("no working buttons or no hint to page on:\n%s", raw)
	}
	validHome(t, view)
}

func validHome(t *testing.T, view any) {
	t.Helper()
	compact, _ := json.Marshal(view)
	for _, e := range slackemu.ValidateView(compact) {
		t.Errorf("Slack would reject this Home tab: %v", e)
	}
}
