package blocks_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
)

func TestListGolden(t *testing.T) {
	t.Parallel()
	seedRaw, err := os.ReadFile("testdata/seed000_request.json")
	if err != nil {
		t.Fatal(err)
	}
	seed := parse(t, seedRaw)
	approval := parse(t, wrap(decisionFixtures["approval"]))
	items := []blocks.ListItem{
		{ID: "aah_decision_abc123", Version: 3, Agent: "pm", Request: seed, Status: aah.StatusPartial,
			ReceivedAt: seedNow, Permalink: "https://example.slack.com/archives/C0APPROVALS/p1",
			Answers: map[string]aah.Answer{"d1": {Value: true, By: aah.Person{ID: "U0ALICE"}}}},
		{ID: "req-fixture", Version: 1, Agent: "release-bot", Request: approval, Status: aah.StatusEscalated,
			ReceivedAt: seedNow.Add(-50 * time.Hour)},
	}
	now := seedNow.Add(5 * 24 * time.Hour) // past the fixture's deadline
	cases := map[string]blocks.Listing{
		"list.two":   {Heading: "Pending requests you may decide", Items: items, Now: now, Next: "mine abc"},
		"list.empty": {Heading: "Open requests in this channel", Now: now, Empty: "Nothing is waiting here."},
		// Escalated, then answered in part: the status stays escalated;
		// the line names the targets as mentions and counts the answers.
		"list.escalated": {Heading: "Pending requests you may decide", Now: now, Items: []blocks.ListItem{
			{ID: "aah_decision_abc123", Version: 5, Agent: "pm", Request: seed, Status: aah.StatusEscalated,
				ReceivedAt: seedNow, Escalated: true, EscalatedTo: []string{"<@U0MANAGER>", "<#C0OPS>"},
				Answers: map[string]aah.Answer{"d1": {Value: true, By: aah.Person{ID: "U0ALICE"}},
					"d2": {Value: false, By: aah.Person{ID: "U0MANAGER"}}}}}},
	}
	for name, l := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			msg := blocks.List(l)
			golden(t, name, map[string]any{"text": msg.Text, "blocks": msg.Blocks})
			checkSlackLimits(t, msg)
		})
	}
}

// A full page stays within Slack's block limit, and the quick buttons carry
// the request message's block id.
func TestListFullPage(t *testing.T) {
	t.Parallel()
	approval := parse(t, wrap(decisionFixtures["approval"]))
	var items []blocks.ListItem
	for range 15 {
		items = append(items, blocks.ListItem{ID: "req-fixture", Version: 7, Request: approval, Status: aah.StatusPending, ReceivedAt: seedNow})
	}
	msg := blocks.List(blocks.Listing{Heading: "All", Items: items, Now: seedNow, Next: "all x"})
	if len(msg.Blocks) > blocks.MaxMessageBlocks {
		t.Fatalf("%d blocks", len(msg.Blocks))
	}
	raw := mustJSON(t, msg.Blocks)
	if n := strings.Count(raw, blocks.BlockID(7, "req-fixture", "ship")); n != blocks.MaxListItems {
		t.Fatalf("quick button blocks = %d, want %d", n, blocks.MaxListItems)
	}
	if !strings.Contains(raw, blocks.ActionListPage) {
		t.Fatal("no Next page button")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
